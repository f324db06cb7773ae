package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run whose checks partly pass, then `sessions follow-up` through the
// binary: the follow-up works in the same workspace on what was left,
// keeps the checks, and is labelled with the session it follows.
func TestFollowUpThroughTheCLI(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	first := writeScript(t, `{"steps": [
		{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]},
		{"text": "Wrote a.txt.", "finish_reason": "stop"}]}`)
	out, errOut, code := c.run("", "run", "--json", "--yes", "--dir", ws, "--max-iterations", "2", "--model", "script:"+first,
		"--verify", "test -f a.txt", "--verify", "test -f b.txt", "write a.txt and b.txt")
	var st struct {
		ID           string
		Verification struct{ Outcome string }
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Verification.Outcome != "partial_pass" {
		t.Fatalf("first run (%d): %s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, `Suggested follow-up task: "Make these checks pass: test -f b.txt"`) {
		t.Errorf("run does not suggest the follow-up:\n%s", errOut)
	}

	second := writeScript(t, `{"steps": [
		{"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b"}}]},
		{"text": "Wrote b.txt.", "finish_reason": "stop"}]}`)
	out, errOut, code = c.run("", "sessions", "follow-up", st.ID, "--model", "script:"+second, "--json")
	if code != 0 {
		t.Fatalf("follow-up (%d):\n%s\n%s", code, out, errOut)
	}
	var fu struct {
		ID, Task, Workspace string
		Labels              map[string]string
		Verify              []string
		Verification        struct{ Outcome string }
	}
	if err := json.Unmarshal([]byte(out), &fu); err != nil {
		t.Fatal(err)
	}
	if fu.Task != "Make these checks pass: test -f b.txt" || fu.Workspace != ws || fu.Labels["follow_up_of"] != st.ID ||
		len(fu.Verify) != 2 || fu.Verification.Outcome != "pass" {
		t.Errorf("follow-up: %+v", fu)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err != nil {
		t.Error(err)
	}
	list, _, _ := c.run("", "sessions", "list", "--label", "follow_up_of="+st.ID)
	if !strings.Contains(list, fu.ID) {
		t.Errorf("the follow-up is not listed by its label:\n%s", list)
	}

	// Nothing left after a pass, unless a task is given; a bad id is named.
	if _, errOut, code := c.run("", "sessions", "follow-up", fu.ID); code == 0 || !strings.Contains(errOut, "left nothing to follow up") {
		t.Errorf("follow-up of a passed session: %d %s", code, errOut)
	}
	if _, errOut, code := c.run("", "sessions", "follow-up", "nosuch"); code == 0 || !strings.Contains(errOut, `"nosuch" not found`) {
		t.Errorf("follow-up of no session: %d %s", code, errOut)
	}
}

// The same against a server: `sessions follow-up --server` asks the
// server to start it, then follows it to its end.
func TestFollowUpAgainstAServer(t *testing.T) {
	c := newCLI(t)
	s := c.serve("--allow-script-models", "--yes", "--workspaces", t.TempDir())
	c.env = append(c.env, "AGENTLOOP_SERVER="+s.url)
	first := writeScript(t, `{"steps": [{"text": "Nothing to do.", "finish_reason": "stop"}]}`)
	out, errOut, _ := c.run("", "run", "--json", "--max-iterations", "1", "--model", "script:"+first, "--verify", "test -f b.txt", "write b.txt")
	var st struct{ ID string }
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.ID == "" {
		t.Fatalf("first run: %s\n%s", out, errOut)
	}
	second := writeScript(t, `{"steps": [
		{"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b"}}]},
		{"text": "Wrote b.txt.", "finish_reason": "stop"}]}`)
	out, errOut, code := c.run("", "sessions", "follow-up", st.ID, "--model", "script:"+second)
	if code != exitCompleted || !strings.Contains(out, "Wrote b.txt.") || !strings.Contains(errOut, "Follow-up of "+st.ID) {
		t.Fatalf("follow-up --server: exit %d\n%s\n%s", code, out, errOut)
	}
}
