package main

import (
	"regexp"
	"strings"
	"testing"
)

// Through the binary: approving a call --for-session lets the same call
// run unasked later; `sessions show` lists the allowance with the command
// that revokes it, and after `sessions revoke` it asks again.
func TestApproveForTheSessionAndRevoke(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps": [
		{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
		{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
		{"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "y"}}]},
		{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
		{"text": "done", "finish_reason": "stop"}]}`)
	approve := regexp.MustCompile(`agentloop sessions approve (\S+) (\S+) (\S+)`)
	_, errOut, code := c.run("", "run", "--dir", t.TempDir(), "--model", "script:"+script, "write the files")
	m := approve.FindStringSubmatch(errOut)
	if code != exitPaused || m == nil {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	id, hashA := m[1], m[3]
	// Approved for the session: step 2 (the same call) runs unasked, and
	// step 3 (b.txt) asks.
	_, errOut, code = c.run("", "sessions", "approve", id, m[2], hashA, "--for-session")
	m = approve.FindStringSubmatch(errOut)
	if code != exitPaused || m == nil || m[3] == hashA {
		t.Fatalf("after approving for the session: exit %d\n%s", code, errOut)
	}
	show, _, _ := c.run("", "sessions", "show", id)
	if !strings.Contains(show, `allowed:   write_file {"path":"a.txt","content":"x"} for the session (revoke: agentloop sessions revoke `+id+" "+hashA+")") ||
		strings.Count(show, "write_file {") < 2 {
		t.Errorf("sessions show:\n%s", show)
	}
	if out, errOut, code := c.run("", "sessions", "revoke", id, hashA, "enough"); code != exitPaused || !strings.Contains(out+errOut, "waiting") {
		t.Fatalf("revoke: exit %d\n%s\n%s", code, out, errOut)
	}
	if show, _, _ = c.run("", "sessions", "show", id); strings.Contains(show, "allowed:") {
		t.Errorf("still allowed after the revoke:\n%s", show)
	}
	// b.txt approved once; step 4 (a.txt again) asks again.
	_, errOut, code = c.run("", "sessions", "approve", id, m[2], m[3])
	m = approve.FindStringSubmatch(errOut)
	if code != exitPaused || m == nil || m[3] != hashA {
		t.Fatalf("a.txt does not ask again after the revoke: exit %d\n%s", code, errOut)
	}
	if out, errOut, code := c.run("", "sessions", "approve", id, m[2], m[3]); code != exitCompleted {
		t.Fatalf("last approval: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := c.run("", "sessions", "revoke", id, hashA); code == 0 || !strings.Contains(errOut, "has ended") {
		t.Errorf("revoke on an ended session: %d %s", code, errOut)
	}
}
