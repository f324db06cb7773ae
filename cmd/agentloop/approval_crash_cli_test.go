package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server killed with SIGKILL while a session waits for an approval: the
// next server still shows the call waiting, the approval given to it runs
// the tool once, and the session completes.
func TestKilledWhileWaitingForAnApproval(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	model := "script:" + writeSteps(t,
		`{"tool_calls":[{"id":"call_w","name":"write_file","arguments":{"path":"approved.txt","content":"yes"}}]}`,
		`{"text":"written after approval"}`)
	s := c.serve("--allow-script-models", "--workspaces", ws)
	var created struct{ ID string }
	if code := apiCall(t, "POST", s.url+"/v1/sessions", `{"task":"write it","model":"`+model+`","workspace":"w","approval":"ask"}`, &created); code != 201 {
		t.Fatalf("create: %d", code)
	}
	s.waitFor(t, created.ID, "waiting")
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	s.wait(t)

	s2 := c.serve("--allow-script-models", "--workspaces", ws)
	defer func() { _ = s2.cmd.Process.Signal(syscall.SIGTERM); s2.wait(t) }()
	var hash string
	for _, e := range allEvents(t, s2.url, created.ID) {
		if e.Type == "approval.requested" {
			var d struct {
				CallID   string `json:"call_id"`
				ArgsHash string `json:"args_hash"`
			}
			_ = json.Unmarshal(e.Data, &d)
			hash = d.ArgsHash
		}
	}
	if hash == "" {
		t.Fatal("after the restart no approval is recorded as requested")
	}
	var st struct{ Status, Reason string }
	deadline := time.Now().Add(10 * time.Second)
	for apiCall(t, "GET", s2.url+"/v1/sessions/"+created.ID, "", &st); st.Status != "waiting" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		apiCall(t, "GET", s2.url+"/v1/sessions/"+created.ID, "", &st)
	}
	if st.Status != "waiting" || st.Reason != "approval" {
		t.Fatalf("after the restart the session is %s (%s), not waiting for the approval", st.Status, st.Reason)
	}
	if code := apiCall(t, "POST", s2.url+"/v1/sessions/"+created.ID+"/approvals/call_w", `{"approve":true,"args_hash":"`+hash+`"}`, nil); code >= 300 {
		t.Fatalf("approve: %d", code)
	}
	s2.waitFor(t, created.ID, "completed")
	if b, err := os.ReadFile(filepath.Join(ws, "w", "approved.txt")); err != nil || string(b) != "yes" {
		t.Fatalf("approved.txt: %q %v", b, err)
	}
	n := 0
	for _, e := range allEvents(t, s2.url, created.ID) {
		if e.Type == "tool.finished" && strings.Contains(string(e.Data), "call_w") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the approved call finished %d times", n)
	}
}
