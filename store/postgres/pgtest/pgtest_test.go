package pgtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentloop/agentloop/internal/testport"
)

// A server whose port another process took before it could bind is told
// as such when postgres exits, so Start can try another port: whether
// the taker is any listener or another PostgreSQL server, which takes
// connections as ours would.
func TestAPortTakenMeanwhileIsToldAsTaken(t *testing.T) {
	s := Own(t)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	s.halt()
	taken, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	err = s.run()
	taken.Close()
	if !errors.Is(err, testport.ErrPortTaken) {
		t.Fatalf("a listener on the port: want ErrPortTaken, got %v", err)
	}
	if err := s.run(); err != nil {
		t.Fatalf("the port free again: %v", err)
	}

	// Another server of ours on the port.
	other := Own(t)
	other.halt()
	other.args[0], other.args[1] = "-p", strconv.Itoa(s.port)
	other.URL, other.port = s.URL, s.port
	if err := other.run(); !errors.Is(err, testport.ErrPortTaken) {
		log, _ := os.ReadFile(filepath.Join(other.dir, "postgres.log"))
		t.Fatalf("another PostgreSQL server on the port: want ErrPortTaken, got %v\nits log:\n%s", err, log)
	}
}

// starterEnv makes a run of this test binary TestStarter.
const starterEnv = "AGENTLOOP_PGTEST_STARTER"

// A server whose starter is killed (no Stop) shuts down rather than run
// on with nobody to stop it.
func TestServerStopsWhenItsStarterIsKilled(t *testing.T) {
	if _, err := binaries(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	testport.CheckServerDiesWithStarter(t, "TestStarter", starterEnv, func(line string) int {
		var pid int
		var dir string
		if n, _ := fmt.Sscanf(line, "postgres %d %s", &pid, &dir); n != 2 {
			return 0
		}
		t.Cleanup(func() { os.RemoveAll(dir) }) // what a killed starter leaves
		return pid
	})
}

// TestStarter starts a server, prints its postgres pid and directory, and
// waits to be killed (run by TestServerStopsWhenItsStarterIsKilled).
func TestStarter(t *testing.T) {
	if os.Getenv(starterEnv) == "" {
		t.Skip("run by TestServerStopsWhenItsStarterIsKilled")
	}
	s, err := Start(false)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("postgres %d %s\n", s.pg.Process.Pid, s.dir)
	select {}
}
