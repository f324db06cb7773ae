package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/service"
)

// Terminating a paused session over HTTP answers with the outcome, and
// with what was left behind when its private sandbox directory could not
// be removed, and what to do about it.
func TestTerminateSaysWhatWasLeftBehind(t *testing.T) {
	base := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(base, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, false, func(c *service.Config) { c.PrivateDirs = base })
	failing := filepath.Join(a.dir, "failing.json")
	step := `{"error":{"kind":"retryable","status":503,"message":"overloaded"}}`
	if err := os.WriteFile(failing, []byte(`{"steps":[`+strings.Repeat(step+",", 7)+step+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	id := a.create("", `{"task":"x","model":"script:`+failing+`"}`)
	a.waitStatus("", id, "paused")
	code, out, _ := a.do("POST", "/v1/sessions/"+id+"/terminate", "", `{"reason":"enough"}`)
	var res struct{ Outcome, Status string }
	json.Unmarshal([]byte(out), &res)
	if code != 200 || res.Status != "terminated" || !strings.HasPrefix(res.Outcome, "terminated; session "+id+" is terminated, but its private sandbox directory") || !strings.Contains(res.Outcome, "remove it by hand") {
		t.Fatalf("terminate: %d %s", code, out)
	}
}
