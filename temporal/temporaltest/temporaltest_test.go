package temporaltest

import (
	"errors"
	"net"
	"os"
	"testing"

	"github.com/agentloop/agentloop/internal/testport"
)

// A port another process took between our check and the server's bind
// is told as such when the server exits, so StartServer can try other ports.
func TestAPortTakenMeanwhileIsToldAtOnce(t *testing.T) {
	cli, err := CLI()
	if err != nil {
		if os.Getenv("AGENTLOOP_TEMPORAL_TESTS") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ports := []int{0, taken.Addr().(*net.TCPAddr).Port, 0}
	for _, i := range []int{0, 2} {
		if ports[i], err = testport.Free(); err != nil {
			t.Fatal(err)
		}
	}
	_, stop, err := startOn(cli, t.TempDir(), ports, 1)
	if err == nil {
		stop()
		t.Fatal("the server started on a port that was taken")
	}
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("want errPortTaken, got %v", err)
	}
}
