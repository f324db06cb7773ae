package pgtest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

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

// starterEnv makes a run of this test binary TestStarter: it starts a
// server, prints its postgres pid and directory, and waits to be killed.
const starterEnv = "AGENTLOOP_PGTEST_STARTER"

// A server whose starter is killed (no Stop) shuts down rather than run
// on with nobody to stop it.
func TestServerStopsWhenItsStarterIsKilled(t *testing.T) {
	if _, err := binaries(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStarter$")
	cmd.Env = append(os.Environ(), starterEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var dir string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, err := fmt.Sscanf(sc.Text(), "postgres %d %s", &pid, &dir); n == 2 && err == nil {
			break
		}
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the starter printed no server")
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := time.Now().Add(time.Minute); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("postgres (pid %d) still runs a minute after its starter was killed", pid)
		}
	}
}

// TestStarter is the starter TestServerStopsWhenItsStarterIsKilled runs.
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
