package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// waitForFile waits until path exists.
func waitForFile(t *testing.T, path string, b *background) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared\n%s", path, b.err.String())
}

// A process killed while it verifies a final answer: recovery verifies
// the same answer again and never calls the model again — a loopback
// model server counts the calls across both processes.
func TestKilledDuringVerificationDoesNotRepeatTheModelCall(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"the work is done\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=k")
	ws := t.TempDir()
	// The first verification hangs (and is killed with the process); the
	// one after recovery passes at once.
	verify := "if [ -f verified-once ]; then true; else touch verified-once; sleep 20; fi"
	a := c.start("run", "--yes", "--model", "openai/gpt-test", "--base-url", srv.URL+"/v1", "--verify", verify, "--dir", ws, "do the work")
	waitForFile(t, filepath.Join(ws, "verified-once"), a)
	a.cmd.Process.Kill()
	a.wait(t)

	out, errOut, code := c.run("", "sessions", "recover")
	if code != exitCompleted || !strings.Contains(out, "the work is done") {
		t.Fatalf("recover: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the model was called %d times, want once", n)
	}
	events, _, _ := c.run("", "sessions", "show", "--events", sessionID(t, c))
	if n := strings.Count(events, `"type":"verification.finished"`); n != 1 || !strings.Contains(events, `"outcome":"pass"`) {
		t.Fatalf("verification not settled once, passing:\n%s", events)
	}
}

// A process killed while a command (not idempotent) runs: recovery does
// not run it again — the model is told its outcome is unknown — and the
// reply that asked for it is not asked for again.
func TestKilledDuringACommandDoesNotRunItAgain(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	script := writeSteps(t,
		`{"tool_calls":[{"name":"execute_command","arguments":{"command":"echo ran >> count.txt; touch running; sleep 20"}}]}`,
		`{"text":"checked the outcome","expect":{"last_message_role":"tool","last_message_contains":"may or may not have taken effect"}}`)
	a := c.start("run", "--yes", "--model", "script:"+script, "--dir", ws, "run it once")
	waitForFile(t, filepath.Join(ws, "running"), a)
	a.cmd.Process.Kill()
	a.wait(t)

	out, errOut, code := c.run("", "sessions", "recover")
	if code != exitCompleted || !strings.Contains(out, "checked the outcome") {
		t.Fatalf("recover: exit %d\n%s\n%s", code, out, errOut)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "count.txt"))
	if got := strings.Count(string(b), "ran"); got != 1 {
		t.Fatalf("the command ran %d times, want once", got)
	}
	events, _, _ := c.run("", "sessions", "show", "--events", sessionID(t, c))
	if n := strings.Count(events, `"type":"model.responded"`); n != 2 {
		t.Fatalf("%d model replies recorded, want 2 (one per script step):\n%s", n, events)
	}
}
