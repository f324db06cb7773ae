package temporaltest

import (
	"errors"
	"net"
	"os"
	"testing"

	"github.com/agentloop/agentloop/internal/testport"
)

// A port another process took between our check and the server's bind
// is told as such when the server exits, so StartServer can try other
// ports: the HTTP port, or the frontend's, where the taker's listener
// answers as ours would.
func TestAPortTakenMeanwhileIsToldAsTaken(t *testing.T) {
	cli, err := CLI()
	if err != nil {
		if os.Getenv("AGENTLOOP_TEMPORAL_TESTS") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	for _, which := range []int{0, 1} {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports := make([]int, 3)
		for i := range ports {
			if ports[i], err = testport.Free(); err != nil {
				t.Fatal(err)
			}
		}
		ports[which] = taken.Addr().(*net.TCPAddr).Port
		_, stop, err := startOn(cli, t.TempDir(), ports, 1)
		taken.Close()
		if err == nil {
			stop()
			t.Fatalf("port %d taken: the server counted as started", which)
		}
		if !errors.Is(err, testport.ErrPortTaken) {
			t.Fatalf("port %d taken: want ErrPortTaken, got %v", which, err)
		}
	}
}
