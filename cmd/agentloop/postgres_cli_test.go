package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store/postgres"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

// apiCall sends a request to a server and decodes its JSON answer.
func apiCall(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
	return resp.StatusCode
}

type eventRow struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// allEvents reads a session's whole log through a server, page by page.
func allEvents(t *testing.T, url, id string) []eventRow {
	t.Helper()
	var out []eventRow
	for after := int64(0); ; {
		var page struct {
			Events []eventRow `json:"events"`
			Next   int64      `json:"next"`
		}
		if code := apiCall(t, "GET", fmt.Sprintf("%s/v1/sessions/%s/events?after=%d&limit=1000", url, id, after), "", &page); code != 200 {
			t.Fatalf("events of %s: %d", id, code)
		}
		out = append(out, page.Events...)
		if len(page.Events) == 0 {
			return out
		}
		after = page.Next
	}
}

func statusOf(t *testing.T, url, id string) string {
	var s struct{ Status string }
	apiCall(t, "GET", url+"/v1/sessions/"+id, "", &s)
	return s.Status
}

// Three servers share one PostgreSQL database: sessions started on each
// are watched through another, one server is killed (SIGKILL) mid-session
// and the others take its sessions over and finish them, controls sent
// through one server reach the session another runs, and every session
// ends once with a gap-free log and every tool call finished once.
func TestServersShareAPostgresDatabase(t *testing.T) {
	c := newCLI(t)
	c.db = pgtest.URL(t)
	ws := t.TempDir()
	if out, errOut, code := c.run("", "db", "migrate", "--db", c.db); code != 0 || !strings.Contains(out, fmt.Sprintf("schema 0 → %d", postgres.SchemaVersion)) {
		t.Fatalf("db migrate: %d %s %s", code, out, errOut)
	}
	var servers []*serving
	for range 3 {
		servers = append(servers, c.serve("--allow-script-models", "--workspaces", ws, "--yes", "--lease-ttl", "1s"))
	}
	const steps = 10
	var script []string
	for i := range steps {
		script = append(script, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}],"delay":"300ms"}`, i, i))
	}
	model := writeScript(t, `{"steps":[`+strings.Join(append(script, `{"text":"wrote ten files"}`), ",")+`]}`)

	// Two sessions started on each server.
	ids := map[string]int{} // session → the server it started on
	for i, s := range servers {
		for k := range 2 {
			var created struct{ ID string }
			body := fmt.Sprintf(`{"task":"write ten files","model":"script:%s","workspace":"s%d-%d","max_iterations":20}`, model, i, k)
			if code := apiCall(t, "POST", s.url+"/v1/sessions", body, &created); code != 201 {
				t.Fatalf("create on server %d: %d", i, code)
			}
			ids[created.ID] = i
		}
	}
	var onB, onA string
	for id, i := range ids {
		if i == 1 {
			onB = id
		}
		if i == 0 {
			onA = id
		}
	}
	// Through server C: pause a session server A runs, and see it paused
	// through A — and stay paused while the servers recover sessions they
	// list as running (one read just before the pause must not resume
	// it). The pause goes out as soon as the session started: its
	// script's delays keep it running for seconds, whatever the machine's
	// load, so the pause reaches it before its end (it is resumed below).
	var out struct{ Outcome string }
	if code := apiCall(t, "POST", servers[2].url+"/v1/sessions/"+onA+"/pause", `{"reason":"checking"}`, &out); code >= 300 {
		t.Fatalf("pause through C: %d", code)
	}
	for deadline := time.Now().Add(60 * time.Second); statusOf(t, servers[0].url, onA) != "paused"; time.Sleep(50 * time.Millisecond) {
		if st := statusOf(t, servers[0].url, onA); time.Now().After(deadline) || st == "completed" {
			t.Fatalf("the session A runs is %s, not paused, after a pause through C", st)
		}
	}

	// A dashboard on server A follows a session server B runs: its events
	// reach A through the database (LISTEN/NOTIFY).
	var before struct {
		LastSeq int64 `json:"seq"`
	}
	apiCall(t, "GET", servers[0].url+"/v1/sessions/"+onB, "", &before)
	got, _ := sseIDs(t, servers[0].url, onB, "", 24)
	if len(got) < int(before.LastSeq)+8 {
		t.Fatalf("server A streamed %v of server B's session", got)
	}

	// Kill server B once its sessions are under way.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var s struct {
			Iteration int `json:"current_iteration"`
		}
		apiCall(t, "GET", servers[0].url+"/v1/sessions/"+onB, "", &s)
		if s.Iteration >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server B's session never reached step 3")
		}
	}
	servers[1].cmd.Process.Signal(syscall.SIGKILL)
	servers[1].wait(t)

	// Resume through C the session A runs, paused through C above — and
	// still paused, while B's sessions were recovered.
	if st := statusOf(t, servers[0].url, onA); st != "paused" {
		t.Fatalf("the session paused through C is %s before it is resumed: a recovery undid the pause", st)
	}
	if code := apiCall(t, "POST", servers[2].url+"/v1/sessions/"+onA+"/resume", `{}`, &out); code >= 300 {
		t.Fatalf("resume through C: %d", code)
	}

	// Every session finishes, whoever runs it now.
	live := []*serving{servers[0], servers[2]}
	for id := range ids {
		for deadline := time.Now().Add(60 * time.Second); statusOf(t, live[0].url, id) != "completed"; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("session %s (started on server %d) is %s\nserver A: %s\nserver C: %s", id, ids[id], statusOf(t, live[0].url, id),
					servers[0].errText(), servers[2].errText())
			}
		}
	}
	for id, i := range ids {
		evs := allEvents(t, live[1].url, id)
		ended, finished := 0, map[string]int{}
		for k, e := range evs {
			if e.Seq != int64(k+1) {
				t.Fatalf("session %s: event %d has seq %d (a gap or a repeat)", id, k+1, e.Seq)
			}
			switch e.Type {
			case "session.ended":
				ended++
			case "tool.finished":
				var d struct {
					CallID string `json:"call_id"`
				}
				json.Unmarshal(e.Data, &d)
				finished[d.CallID]++
			}
		}
		if ended != 1 {
			t.Fatalf("session %s ended %d times", id, ended)
		}
		if len(finished) != steps {
			t.Fatalf("session %s: %d tool calls finished, want %d: %v", id, len(finished), steps, finished)
		}
		for call, n := range finished {
			if n != 1 {
				t.Fatalf("session %s: tool call %s finished %d times", id, call, n)
			}
		}
		for f := range steps {
			b, err := os.ReadFile(filepath.Join(ws, fmt.Sprintf("s%d-%d", i, 0), fmt.Sprintf("f%d.txt", f)))
			if err != nil || string(b) != fmt.Sprint(f) {
				t.Fatalf("session %s: f%d.txt: %q %v", id, f, b, err)
			}
		}
	}
	if !strings.Contains(servers[0].errText()+servers[2].errText(), "recovered session") {
		t.Fatalf("no server says it took over server B's sessions:\nA: %s\nC: %s", servers[0].errText(), servers[2].errText())
	}
}
