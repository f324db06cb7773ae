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

// starterEnv makes a run of this test binary TestStarter.
const starterEnv = "AGENTLOOP_PGTEST_STARTER"

// A server whose starter is killed (no Stop) shuts down rather than run
// on with nobody to stop it, and the next server started removes its
// directory.
func TestServerStopsWhenItsStarterIsKilled(t *testing.T) {
	if _, err := binaries(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	// A temporary directory of this test's own, for the starter (which
	// inherits the environment) and the Start below: another test
	// binary's Start could otherwise sweep the killed starter's directory
	// before this test looks at it.
	// Passable by the user the server runs as under root.
	tmp := t.TempDir()
	os.Chmod(filepath.Dir(tmp), 0o711)
	os.Chmod(tmp, 0o711)
	t.Setenv("TMPDIR", tmp)
	var dir string
	testport.CheckServerDiesWithStarter(t, "TestStarter", starterEnv, func(line string) int {
		var pid int
		if n, _ := fmt.Sscanf(line, "postgres %d %s", &pid, &dir); n != 2 {
			return 0
		}
		t.Cleanup(func() { os.RemoveAll(dir) }) // if this test fails
		return pid
	})
	if _, err := os.Stat(filepath.Join(dir, "data")); err != nil {
		t.Fatalf("the killed starter's directory: %v", err)
	}
	s, err := Start(false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the killed starter's directory %s is still there after the next Start (%v)", dir, err)
	}
}

// Sweeping leaves alone the directory of a server whose starter runs, and
// a directory without a lock until it is old.
func TestSweepLeavesWhatIsInUse(t *testing.T) {
	s := Own(t)
	tmp := t.TempDir()
	young := filepath.Join(tmp, dirPrefix+"young")
	old := filepath.Join(tmp, dirPrefix+"old")
	notDir := filepath.Join(tmp, dirPrefix+"file")
	for _, d := range []string{young, old} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(notDir, nil, 0o600)
	long := time.Now().Add(-2 * unlockedAge)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	removeAbandoned(filepath.Dir(s.dir))
	removeAbandoned(tmp)
	for _, d := range []string{s.dir, young, notDir} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an hour-old directory without a lock is still there (%v)", err)
	}
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

// A sweep running while starters take their locks never removes a
// directory whose starter runs, nor keeps one from taking its lock.
func TestSweepNeverTakesADirectoryBeingLocked(t *testing.T) {
	tmp := t.TempDir()
	done := make(chan struct{})
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		for {
			select {
			case <-done:
				return
			default:
				removeAbandoned(tmp)
			}
		}
	}()
	defer func() { close(done); <-swept }()
	for i := range 1000 {
		dir, err := os.MkdirTemp(tmp, dirPrefix)
		if err != nil {
			t.Fatal(err)
		}
		lock, err := lockOwner(dir)
		if err != nil {
			t.Fatalf("start %d: taking the lock: %v", i, err)
		}
		if _, err := os.Stat(filepath.Join(dir, ownerLock)); err != nil {
			t.Fatalf("start %d: the directory of a starter that runs was swept: %v", i, err)
		}
		os.RemoveAll(dir)
		lock.Close()
	}
}
