package temporaltest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// starterEnv makes a run of this test binary TestStarter.
const starterEnv = "AGENTLOOP_TEMPORALTEST_STARTER"

// A dev server whose starter is killed (no stop) exits rather than run on
// with nobody to stop it.
func TestServerStopsWhenItsStarterIsKilled(t *testing.T) {
	if _, err := CLI(); err != nil {
		if os.Getenv("AGENTLOOP_TEMPORAL_TESTS") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	testport.CheckServerDiesWithStarter(t, "TestStarter", starterEnv, func(line string) int {
		port, ok := strings.CutPrefix(line, "temporal 127.0.0.1:")
		if !ok {
			return 0
		}
		return serverPid(port)
	})
}

// serverPid finds the dev server started with --port port.
func serverPid(port string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "start-dev\x00") || !strings.Contains(string(b), "\x00--port\x00"+port+"\x00") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		return pid
	}
	return 0
}

// TestStarter starts a dev server, prints its address, and waits to be
// killed (run by TestServerStopsWhenItsStarterIsKilled).
func TestStarter(t *testing.T) {
	dir := os.Getenv(starterEnv)
	if dir == "" {
		t.Skip("run by TestServerStopsWhenItsStarterIsKilled")
	}
	cli, err := CLI()
	if err != nil {
		t.Fatal(err)
	}
	addr, _, err := StartServer(cli, dir)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("temporal %s\n", addr)
	select {}
}
