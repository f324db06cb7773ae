package sqlite_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/store/sqlite"
)

// TestOpenCloseChild opens and closes the database at
// $AGENTLOOP_OPEN_CLOSE_DB again and again, as short-lived CLI commands do,
// and prints the opens that failed.
func TestOpenCloseChild(t *testing.T) {
	path := os.Getenv("AGENTLOOP_OPEN_CLOSE_DB")
	if path == "" {
		t.Skip("run by TestOpenWhileAnotherProcessOpensAndCloses")
	}
	openClose(path, 1500)
}

func openClose(path string, n int) (failed []string) {
	for range n {
		s, err := sqlite.Open(path)
		if err != nil {
			fmt.Println("FAILED", err)
			failed = append(failed, err.Error())
			continue
		}
		s.Close()
	}
	return failed
}

// Two processes opening and closing one database at once never fail to
// open it: the last connection's close checkpoints and removes the WAL,
// and a connection opening meanwhile can be told "database is locked" at
// once, without SQLite's busy timeout (Open tries it again).
func TestOpenWhileAnotherProcessOpensAndCloses(t *testing.T) {
	if testing.Short() {
		t.Skip("two processes open and close a database 150 times each")
	}
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenCloseChild$")
	cmd.Env = append(os.Environ(), "AGENTLOOP_OPEN_CLOSE_DB="+path)
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	failed := openClose(path, 1500)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	if n := strings.Count(out.String(), "FAILED"); n > 0 || len(failed) > 0 {
		t.Fatalf("opens failed: %d here (%v), %d in the other process:\n%s", len(failed), failed, n, out.String())
	}
}
