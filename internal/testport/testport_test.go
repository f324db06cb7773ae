package testport

import (
	"net"
	"strconv"
	"testing"
)

// A port Free returns can be listened on, and lies below the ephemeral
// range where the kernel has one to stay below.
func TestFreeGivesAPortToListenOn(t *testing.T) {
	for range 20 {
		p, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		if low := ephemeralLow(); low > minPort+1000 && (p < minPort || p >= low) {
			t.Fatalf("port %d is not in [%d, %d)", p, minPort, low)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
}
