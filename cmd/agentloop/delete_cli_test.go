package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/teststop"
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

// forkChain has run a session through the binary ("openai/orig" writes
// f0.txt = "step 1" in step 1, and more over 8 steps) and forks sessions
// of c through the binary.
type forkChain struct {
	t    *testing.T
	c    *cli
	url  string
	orig string
}

func newForkChain(t *testing.T) *forkChain {
	srv, _ := startForkModels(t)
	c := newCLI(t)
	ws := t.TempDir()
	out, errOut, code := c.run("", "run", "--yes", "--model", "openai/orig", "--base-url", srv.URL+"/v1", "--api-key", "k", "--dir", ws, "edit the files")
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	return &forkChain{t: t, c: c, url: srv.URL, orig: sessionID(t, c)}
}

// fork forks session from at step at, checks the fork has step 1's
// f0.txt (read from the original's snapshots) and returns its ID.
func (fc *forkChain) fork(from, at string) string {
	t := fc.t
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fork")
	out, errOut, code := fc.c.run("", "sessions", "fork", from, "--at", at, "--yes", "--model", "openai/fork", "--base-url", fc.url+"/v1", "--api-key", "k", "--dir", dir)
	if code != 0 {
		t.Fatalf("fork of %s at %s: %d\n%s\n%s", from, at, code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f0.txt")); err != nil || string(b) != "step 1\n" {
		t.Fatalf("fork of %s at %s: f0.txt %q %v", from, at, b, err)
	}
	return sessionID(t, fc.c)
}

// del deletes session id through the binary.
func (fc *forkChain) del(id string) {
	t := fc.t
	t.Helper()
	out, errOut, code := fc.c.run("", "sessions", "delete", id, "--json")
	var res struct {
		ID      string
		Deleted bool
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.ID != id || !res.Deleted {
		t.Fatalf("delete %s: %d %q %s", id, code, out, errOut)
	}
}

// delKilled runs agentloop sessions delete id stopped at point, and
// SIGKILLs it there.
func (fc *forkChain) delKilled(id, point string) {
	t := fc.t
	t.Helper()
	fc.c.env = append(fc.c.env, teststop.Env+"="+point)
	p := fc.c.start("sessions", "delete", id)
	fc.c.env = fc.c.env[:len(fc.c.env)-1]
	for deadline := time.Now().Add(time.Minute); !strings.Contains(p.err.String(), "stopped at "+point); {
		if time.Now().After(deadline) {
			t.Fatalf("the delete of %s never reached %s:\n%s", id, point, p.err.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.cmd.Process.Kill() // SIGKILL
	p.wait(t)
}

// agentloop sessions delete removes a session's checkpoints with it, but
// not while a fork that is left reads them: a chain orig → fork → fork
// of the fork, deleted from the original down, keeps every repository
// until the last session goes, and the fork of the fork forks again
// meanwhile.
func TestSessionsDeleteRemovesCheckpoints(t *testing.T) {
	fc := newForkChain(t)
	orig := fc.orig
	f1 := fc.fork(orig, "2")
	f2 := fc.fork(f1, "2")
	all := []string{orig, f1, f2}
	sort.Strings(all)
	if got := checkpointRepos(t, fc.c); !slices.Equal(got, all) {
		t.Fatalf("checkpoints of %v, want %v", got, all)
	}
	fc.del(orig)
	fc.del(f1)
	if got := checkpointRepos(t, fc.c); !slices.Equal(got, all) {
		t.Fatalf("after deleting orig and its fork: checkpoints of %v, want all three (the fork of the fork reads them)", got)
	}
	f3 := fc.fork(f2, "1") // reads orig's first step through f2
	fc.del(f3)
	fc.del(f2)
	if got := checkpointRepos(t, fc.c); len(got) != 0 {
		t.Fatalf("after deleting every session: checkpoints of %v", got)
	}
	if _, e, code := fc.c.run("", "sessions", "delete", f2); code == 0 || !strings.Contains(e, "not found") {
		t.Fatalf("deleting a deleted session: %d %s", code, e)
	}
}

// A delete SIGKILLed once the session's row is gone but before its
// checkpoints were released leaves them (a leftover, never a loss): the
// fork still reads them. One killed between removing a repository and
// its mark is finished by the next delete.
func TestSessionsDeleteKilledKeepsWhatForksNeed(t *testing.T) {
	fc := newForkChain(t)
	orig := fc.orig
	f1 := fc.fork(orig, "2")
	fc.delKilled(orig, "delete-before-release")
	if _, _, code := fc.c.run("", "sessions", "show", orig); code == 0 {
		t.Fatal("the killed delete did not delete the session")
	}
	f2 := fc.fork(f1, "1") // reads orig's step 1
	fc.delKilled(f2, "release-between-repository-and-mark")
	checkpoints := filepath.Join(filepath.Dir(fc.c.db), "checkpoints")
	if _, err := os.Stat(filepath.Join(checkpoints, f2+".deleted")); err != nil {
		t.Fatalf("no mark left by the killed sweep: %v", err)
	}
	fc.fork(f1, "1") // still reads orig's step 1; deleted below
	want := []string{orig, f1}
	sort.Strings(want)
	if got := checkpointRepos(t, fc.c); len(got) != 3 || !slices.Contains(got, orig) || !slices.Contains(got, f1) {
		t.Fatalf("checkpoints of %v, want %v and the new fork", got, want)
	}
	fc.del(sessionID(t, fc.c))
	fc.del(f1)
	// orig's repository was never marked (the kill came first): left
	// over, as designed; everything else is gone, marks included.
	if got := checkpointRepos(t, fc.c); !slices.Equal(got, []string{orig}) {
		t.Fatalf("checkpoints of %v, want only the leftover %s", got, orig)
	}
	if marks, _ := filepath.Glob(filepath.Join(checkpoints, "*.deleted")); len(marks) != 0 {
		t.Fatalf("marks left: %v", marks)
	}
}
