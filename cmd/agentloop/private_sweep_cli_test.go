package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/temporal/temporaltest"
)

// A server removes, as it starts, the private sandbox directories this
// machine kept of sessions that ended elsewhere a while ago (another
// server took them over and ended them), and leaves those of a session
// not over, of one that ended just now, and of one its database does not
// know.
func TestServeSweepsPrivateDirectoriesOfSessionsEndedElsewhere(t *testing.T) {
	c := newCLI(t)
	check := plantPrivateDirs(t, c)
	s := c.serve()
	defer s.stop()
	check(s.background)
}

// So does a Temporal worker, for sessions whose last steps ran on other
// workers.
func TestWorkerSweepsPrivateDirectoriesOfSessionsEndedElsewhere(t *testing.T) {
	hostPort := temporaltest.Start(t)
	c := newCLI(t)
	check := plantPrivateDirs(t, c)
	w := c.start("worker", "--temporal", hostPort, "--db", c.db, "--task-queue", "sweep")
	defer w.stop()
	check(w)
}

// plantPrivateDirs records, in c's database, a session that ended an hour
// ago, one that ended just now and one paused an hour ago, and gives each
// a private directory on this machine, as do one of a session the
// database does not know. check waits for the process b to remove the
// first directory, and checks it left the others and said what it did.
func plantPrivateDirs(t *testing.T, c *cli) (check func(b *background)) {
	t.Helper()
	c.env = append(c.env, "TMPDIR="+t.TempDir())
	db, err := sqlite.Open(c.db)
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-time.Hour)
	for _, s := range []struct {
		id   string
		last loop.Payload
		at   time.Time
	}{
		{"ended-long-ago", &loop.SessionEnded{Status: loop.StatusCompleted, Reason: loop.ReasonCompleted}, long},
		{"ended-just-now", &loop.SessionEnded{Status: loop.StatusFailed, Reason: loop.ReasonMaxIterations}, time.Now()},
		{"paused-long-ago", &loop.SessionPaused{Reason: loop.ReasonUser, Detail: "later"}, long},
	} {
		if err := db.Append(t.Context(), loop.NewEvent(s.id, 1, long, &loop.SessionStarted{Task: "t"}), loop.NewEvent(s.id, 2, s.at, s.last)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	base := privateBase(c)
	blob := func(id string) string { return filepath.Join(base, id, "home", ".cache", "blob") }
	for _, id := range []string{"ended-long-ago", "ended-just-now", "paused-long-ago", "in-another-database"} {
		if err := os.MkdirAll(filepath.Dir(blob(id)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(blob(id), []byte("cached"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return func(b *background) {
		t.Helper()
		// Once the process said it removed one, the sweep has looked
		// at every directory.
		for deadline := time.Now().Add(time.Minute); !strings.Contains(b.errText(), "removed the private sandbox directories of sessions that ended elsewhere"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the process did not say it removed a directory a minute after it started:\n%s", b.errText())
			}
		}
		if !strings.Contains(b.errText(), "sessions=1") {
			t.Errorf("the process did not say it removed one directory:\n%s", b.errText())
		}
		if !isGone(filepath.Join(base, "ended-long-ago")) {
			t.Errorf("the private directory of a session that ended an hour ago is still there")
		}
		for _, keep := range []string{"ended-just-now", "paused-long-ago", "in-another-database"} {
			if isGone(blob(keep)) {
				t.Errorf("the private directory of %s was removed", keep)
			}
		}
	}
}

// agentloop sessions terminate ends a paused session even when its
// private sandbox directory cannot be removed, and says on stderr what
// was left and what to do.
func TestTerminateSaysWhatItLeftBehind(t *testing.T) {
	c := newCLI(t)
	c.env = append(c.env, "TMPDIR="+t.TempDir())
	db, err := sqlite.Open(c.db)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	if err := db.Append(t.Context(), loop.NewEvent("paused-1", 1, at, &loop.SessionStarted{Task: "t"}), loop.NewEvent("paused-1", 2, at, &loop.SessionPaused{Reason: loop.ReasonUser})); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Where the private directories go is a file: nothing there can be removed.
	if err := os.WriteFile(privateBase(c), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := c.run("", "sessions", "terminate", "paused-1")
	if code != 0 || !strings.Contains(errOut, "agentloop sessions terminate: session paused-1 is terminated, but its private sandbox directory in "+privateBase(c)+" could not be removed") || !strings.Contains(errOut, "remove it by hand") {
		t.Fatalf("terminate: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if out, _, _ := c.run("", "sessions", "show", "--json", "paused-1"); !strings.Contains(out, `"status": "terminated"`) && !strings.Contains(out, `"status":"terminated"`) {
		t.Fatalf("the session after terminate: %s", out)
	}
}
