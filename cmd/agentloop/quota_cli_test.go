package main

import (
	"encoding/json"
	"sync"
	"testing"
)

// With --quota-running 2, a burst of simultaneous creates leaves exactly
// two running, and a waiting session cannot be set running again past the
// limit; ending one makes room.
func TestRunningQuotaHoldsUnderABurst(t *testing.T) {
	c := newCLI(t)
	// Each session stays running: its model takes a minute to answer.
	script := writeScript(t, `{"steps":[{"text":"done","delay":"60s"}]}`)
	asks := writeScript(t, `{"steps":[{"tool_calls":[{"name":"ask_user","arguments":{"question":"go on?"}}]},{"text":"done","delay":"60s"}]}`)
	s := c.serve("--allow-script-models", "--quota-running", "2", "--model", "script:"+script, "--workspaces", t.TempDir())
	json201 := map[string]string{"Content-Type": "application/json"}
	code, body, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"ask","model":"script:` + asks + `"}`, json201})
	var waiting struct{ ID string }
	if json.Unmarshal([]byte(body), &waiting); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	s.waitFor(t, waiting.ID, "waiting")
	codes := make([]int, 20)
	ids := make([]string, 20)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			code, body, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"wait"}`, json201})
			var created struct{ ID string }
			json.Unmarshal([]byte(body), &created)
			codes[i], ids[i] = code, created.ID
		})
	}
	wg.Wait()
	var started []string
	for i, code := range codes {
		switch code {
		case 201:
			started = append(started, ids[i])
		case 429:
		default:
			t.Fatalf("create %d: %d", i, code)
		}
	}
	running := func() int {
		_, body, _ := s.send(t, request{"GET", "/v1/sessions?status=running", "", nil})
		var page struct{ Sessions []json.RawMessage }
		json.Unmarshal([]byte(body), &page)
		return len(page.Sessions)
	}
	if len(started) != 2 || running() != 2 {
		t.Fatalf("%d of 20 creates started, %d running; the limit is 2", len(started), running())
	}
	if code, body, _ := s.send(t, request{"POST", "/v1/sessions/" + waiting.ID + "/reply", `{"text":"yes"}`, json201}); code != 429 {
		t.Fatalf("a reply that would run a third session: %d %s", code, body)
	}
	if n := running(); n != 2 {
		t.Fatalf("%d running, the limit is 2", n)
	}
	if code, body, _ := s.send(t, request{"POST", "/v1/sessions/" + started[0] + "/terminate", `{"reason":"done"}`, json201}); code >= 300 {
		t.Fatalf("terminate: %d %s", code, body)
	}
	s.waitFor(t, started[0], "terminated", "failed", "completed", "error")
	if code, body, _ := s.send(t, request{"POST", "/v1/sessions/" + waiting.ID + "/reply", `{"text":"yes"}`, json201}); code >= 300 {
		t.Fatalf("a reply with room: %d %s", code, body)
	}
	if n := running(); n != 2 {
		t.Fatalf("%d running after the reply, want 2", n)
	}
	for _, id := range []string{started[1], waiting.ID} {
		s.send(t, request{"POST", "/v1/sessions/" + id + "/terminate", `{"reason":"done"}`, json201})
	}
}
