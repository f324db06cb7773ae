package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// checkpointRepos lists the sessions with a shadow repository beside
// c's database.
func checkpointRepos(t *testing.T, c *cli) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(c.db), "checkpoints", "*.git"))
	var ids []string
	for _, d := range dirs {
		ids = append(ids, strings.TrimSuffix(filepath.Base(d), ".git"))
	}
	sort.Strings(ids)
	return ids
}

// agentloop sessions delete removes a session's checkpoints with it, but
// not while a fork that is left reads them: a chain orig → fork → fork
// of the fork, deleted from the original down, keeps every repository
// until the last session goes, and the fork of the fork forks again
// meanwhile.
func TestSessionsDeleteRemovesCheckpoints(t *testing.T) {
	srv, _ := startForkModels(t)
	c := newCLI(t)
	ws := t.TempDir()
	out, errOut, code := c.run("", "run", "--yes", "--model", "openai/orig", "--base-url", srv.URL+"/v1", "--api-key", "k", "--dir", ws, "edit the files")
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	orig := sessionID(t, c)
	fork := func(from, at string) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "fork")
		out, errOut, code := c.run("", "sessions", "fork", from, "--at", at, "--yes", "--model", "openai/fork", "--base-url", srv.URL+"/v1", "--api-key", "k", "--dir", dir)
		if code != 0 {
			t.Fatalf("fork of %s at %s: %d\n%s\n%s", from, at, code, out, errOut)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "f0.txt")); err != nil || string(b) != "step 1\n" {
			t.Fatalf("fork of %s at %s: f0.txt %q %v", from, at, b, err)
		}
		return sessionID(t, c)
	}
	f1 := fork(orig, "2")
	f2 := fork(f1, "2")
	all := []string{orig, f1, f2}
	sort.Strings(all)
	if got := checkpointRepos(t, c); !slices.Equal(got, all) {
		t.Fatalf("checkpoints of %v, want %v", got, all)
	}

	del := func(id string) {
		t.Helper()
		out, errOut, code := c.run("", "sessions", "delete", id, "--json")
		var res struct {
			ID      string
			Deleted bool
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.ID != id || !res.Deleted {
			t.Fatalf("delete %s: %d %q %s", id, code, out, errOut)
		}
	}
	del(orig)
	del(f1)
	if got := checkpointRepos(t, c); !slices.Equal(got, all) {
		t.Fatalf("after deleting orig and its fork: checkpoints of %v, want all three (the fork of the fork reads them)", got)
	}
	f3 := fork(f2, "1") // reads orig's first step through f2
	del(f3)
	del(f2)
	if got := checkpointRepos(t, c); len(got) != 0 {
		t.Fatalf("after deleting every session: checkpoints of %v", got)
	}
	if _, e, code := c.run("", "sessions", "delete", f2); code == 0 || !strings.Contains(e, "not found") {
		t.Fatalf("deleting a deleted session: %d %s", code, e)
	}
}
