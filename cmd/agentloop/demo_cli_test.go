package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The dashboard's "Run the demo" button: a server started with --demo
// starts the demo again on POST /v1/demo, and that session plans, writes
// hello.sh, runs it (its output is in the log) and completes. A
// server without --demo has no demo.
func TestDemoAgainOverHTTP(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	s := c.serve("--demo", "--workspaces", ws)
	code, out := s.post(t, "/v1/demo", "")
	if code != http.StatusCreated {
		t.Fatalf("POST /v1/demo: %d %s", code, out)
	}
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.ID == "" {
		t.Fatalf("POST /v1/demo answered %s", out)
	}
	if st := s.waitFor(t, created.ID, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("the second demo session ended %s\n%s", st, s.errText())
	}
	resp, err := http.Get(s.url + "/v1/sessions/" + created.ID + "/events?limit=1000")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var page struct {
		Events []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		t.Fatalf("events page: %v: %.300s", err, raw)
	}
	seen := map[string]bool{}
	for _, e := range page.Events {
		seen[e.Type] = true
		// Only the command's output says it: write_file's result does not.
		if e.Type == "tool.finished" && strings.Contains(string(e.Data), "hello from agentloop") {
			seen["command output"] = true
		}
	}
	for _, want := range []string{"plan.updated", "tool.finished", "command output", "session.ended"} {
		if !seen[want] {
			t.Errorf("the demo's log has no %s: %.2000s", want, raw)
		}
	}
	// The file it wrote is in its own new workspace under --workspaces.
	var st struct {
		Workspace string `json:"workspace"`
	}
	resp, err = http.Get(s.url + "/v1/sessions/" + created.ID)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if filepath.Dir(st.Workspace) != ws {
		t.Fatalf("the demo's workspace %q is not a new directory in %s", st.Workspace, ws)
	}
	if b, err := os.ReadFile(filepath.Join(st.Workspace, "hello.sh")); err != nil || !strings.Contains(string(b), "hello from agentloop") {
		t.Fatalf("hello.sh in the demo workspace: %v %q", err, b)
	}

	plain := newCLI(t).serve("--workspaces", t.TempDir())
	if code, out := plain.post(t, "/v1/demo", ""); code != http.StatusNotFound || !strings.Contains(out, "--demo") {
		t.Fatalf("POST /v1/demo without --demo: %d %s", code, out)
	}
}
