package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A server run as root with a sandbox gives a fork's workspace, every
// exported file in it, to the sandbox user, so the fork's commands write
// it; the workspace is the server's own, named after the fork, and goes
// when the fork is deleted.
func TestForkedSessionsWriteTheirWorkspaceAsRoot(t *testing.T) {
	c := rootSandboxCLI(t, "it checks what a server running as root gives a fork's commands")
	root := sandboxWorkspaces(t)
	script := writeScript(t, `{"steps":[
		{"tool_calls":[{"name":"execute_command","arguments":{"command":"mkdir -p d && echo one > d/a.txt"}}]},
		{"tool_calls":[{"name":"execute_command","arguments":{"command":"id -u > who.txt && echo two >> d/a.txt"}}]},
		{"text":"done"}]}`)
	s := c.serve("--sandbox", "landlock", "--yes", "--model", "script:"+script, "--workspaces", root)
	defer func() { s.cmd.Process.Signal(syscall.SIGTERM); s.wait(t) }()
	code, body := s.post(t, "/v1/sessions", `{"task":"write"}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	if st := s.waitFor(t, created.ID, "completed", "failed", "waiting", "paused", "error"); st != "completed" {
		t.Fatalf("the session is %s", st)
	}
	code, body = s.post(t, "/v1/sessions/"+created.ID+"/fork", `{"at":1}`)
	if code != 201 {
		t.Fatalf("fork: %d %s", code, body)
	}
	var fork struct{ ID string }
	json.Unmarshal([]byte(body), &fork)
	if st := s.waitFor(t, fork.ID, "completed", "failed", "waiting", "paused", "error"); st != "completed" {
		t.Fatalf("the fork is %s\n%s", st, s.errText())
	}
	dir := filepath.Join(root, fork.ID)
	who, err := os.ReadFile(filepath.Join(dir, "who.txt"))
	if err != nil || strings.TrimSpace(string(who)) == "0" || strings.TrimSpace(string(who)) == "" {
		t.Fatalf("the fork's command ran as %q (%v)", who, err)
	}
	if a, _ := os.ReadFile(filepath.Join(dir, "d", "a.txt")); string(a) != "one\ntwo\n" {
		t.Fatalf("the fork's d/a.txt: %q", a)
	}
	if code := apiCall(t, "DELETE", s.url+"/v1/sessions/"+fork.ID, "", nil); code != 204 {
		t.Fatalf("delete the fork: %d", code)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the fork's workspace outlived it: %v", err)
	}
}
