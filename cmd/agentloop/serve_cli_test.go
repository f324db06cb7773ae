package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// serving is a running `agentloop serve`.
type serving struct {
	*background
	url string
}

var listening = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// serve starts the real binary on a free loopback port.
func (c *cli) serve(args ...string) *serving {
	c.t.Helper()
	b := c.start(append([]string{"serve", "--db", c.db, "--addr", "127.0.0.1:0", "--grace", "10s"}, args...)...)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := listening.FindStringSubmatch(b.errText()); m != nil {
			s := &serving{background: b, url: m[1]}
			for time.Now().Before(deadline) { // ready once recovery is done
				if resp, err := http.Get(s.url + "/readyz"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						return s
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("the server did not start:\n%s", b.errText())
	return nil
}

func (b *background) errText() string { return b.err.String() }

func (s *serving) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(s.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *serving) state(t *testing.T, id string) (status, reason string) {
	t.Helper()
	resp, err := http.Get(s.url + "/v1/sessions/" + id)
	if err != nil {
		return "", ""
	}
	defer resp.Body.Close()
	var st struct{ Status, Reason string }
	json.NewDecoder(resp.Body).Decode(&st)
	return st.Status, st.Reason
}

func (s *serving) waitFor(t *testing.T, id string, statuses ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, _ := s.state(t, id)
		for _, want := range statuses {
			if st == want {
				return st
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("session %s never became %v\n%s", id, statuses, s.errText())
	return ""
}

// sseIDs reads a session's event stream from lastID until it ends (after
// session.ended) or until stop events arrived.
func sseIDs(t *testing.T, url, id, lastID string, stop int) ([]string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil // the server went away
	}
	defer resp.Body.Close()
	var ids, types []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, v)
		}
		if v, ok := strings.CutPrefix(line, "event: "); ok && v != "delta" {
			types = append(types, v)
			if stop > 0 && len(types) == stop {
				break
			}
		}
	}
	return ids, types
}

// The real server, killed with SIGKILL mid-session and started again:
// every session finishes — one on a scripted model, one on a loopback
// OpenAI-compatible server — and an event stream resumed with the last id
// it saw continues without a gap or a repeat.
func TestServerSurvivesSIGKILL(t *testing.T) {
	var calls atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := calls.Add(1)
		time.Sleep(150 * time.Millisecond)
		w.Header().Set("Content-Type", "text/event-stream")
		if n < 4 {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_%d\",\"type\":\"function\",\"function\":{\"name\":\"list_dir\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n", n)
			return
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"provider session done\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(provider.Close)

	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=k")
	ws := t.TempDir()
	var steps []string
	for i := range 8 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"execute_command","arguments":{"command":"echo %d > f%d.txt"}}],"delay":"150ms"}`, i, i))
	}
	steps = append(steps, `{"text":"scripted session done"}`)
	scriptPath := writeSteps(t, steps...)

	serveArgs := []string{"--allow-script-models", "--yes", "--workspaces", ws, "--model", "openai/gpt-test", "--base-url", provider.URL + "/v1"}
	s := c.serve(serveArgs...)
	create := func(body string) string {
		code, out := s.post(t, "/v1/sessions", body)
		if code != 201 {
			t.Fatalf("create: %d %s", code, out)
		}
		var r struct{ ID string }
		json.Unmarshal([]byte(out), &r)
		return r.ID
	}
	a := struct{ ID string }{create(fmt.Sprintf(`{"task":"count","model":"script:%s","max_iterations":20}`, scriptPath))}
	onProvider := create(`{"task":"look around","max_iterations":20}`)

	seen, _ := sseIDs(t, s.url, a.ID, "", 6)
	if len(seen) < 5 {
		t.Fatalf("stream before the kill: %v", seen)
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.wait(t)

	s2 := c.serve(serveArgs...)
	rest, types := sseIDs(t, s2.url, a.ID, seen[len(seen)-1], 0)
	all := append(seen, rest...)
	for i, v := range all {
		if v != fmt.Sprint(i+1) {
			t.Fatalf("ids across the restart %v: a gap or a repeat at %d", all, i)
		}
	}
	if len(types) == 0 || types[len(types)-1] != "session.ended" {
		t.Fatalf("the resumed stream did not end with session.ended: %v", types)
	}
	if st, reason := s2.state(t, a.ID); st != "completed" || reason != "completed" {
		t.Fatalf("scripted session after the restart: %s (%s)", st, reason)
	}
	if st := s2.waitFor(t, onProvider, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("provider session after the restart: %s", st)
	}
	// The same log over a WebSocket, from the start, to session.ended.
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	conn, _, err := websocket.Dial(wctx, "ws"+strings.TrimPrefix(s2.url, "http")+"/v1/sessions/"+onProvider+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	var last struct {
		Type string
		Seq  int64
	}
	for n := int64(1); ; {
		var msg struct {
			Type string
			Seq  int64
		}
		if err := wsjson.Read(wctx, conn, &msg); err != nil {
			break
		}
		if msg.Seq == 0 {
			continue // a timeline line
		}
		if msg.Seq != n {
			t.Fatalf("websocket: seq %d where %d was due", msg.Seq, n)
		}
		n++
		last = msg
	}
	if last.Type != "session.ended" {
		t.Fatalf("websocket ended at %+v", last)
	}
	// Nothing ran twice: the scripted session echoed 0..7 once each.
	_, evs := sseIDs(t, s2.url, a.ID, "", 0)
	if n := strings.Count(strings.Join(evs, " "), "tool.finished"); n != 8 {
		t.Fatalf("%d tool results in the scripted session, want 8: %v", n, evs)
	}
	s2.cmd.Process.Signal(syscall.SIGTERM)
	if code := s2.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, s2.errText())
	}
}

// SIGTERM pauses running sessions at a safe point (reason shutdown) and
// the server exits 0; started again, it resumes them to the end.
func TestServerShutdownPausesAndResumes(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	var steps []string
	for i := range 6 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"x"}}],"delay":"150ms"}`, i))
	}
	steps = append(steps, `{"text":"all written"}`)
	scriptPath := writeSteps(t, steps...)
	s := c.serve("--allow-script-models", "--yes", "--workspaces", ws)
	code, out := s.post(t, "/v1/sessions", fmt.Sprintf(`{"task":"write","model":"script:%s"}`, scriptPath))
	if code != 201 {
		t.Fatalf("create: %d %s", code, out)
	}
	var r struct{ ID string }
	json.Unmarshal([]byte(out), &r)
	sseIDs(t, s.url, r.ID, "", 4)
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, s.errText())
	}
	shown := showJSON(t, c, r.ID)
	if shown.Status != "paused" || shown.Reason != "shutdown" {
		t.Fatalf("after SIGTERM: %s (%s)", shown.Status, shown.Reason)
	}
	s2 := c.serve("--allow-script-models", "--yes", "--workspaces", ws)
	if st := s2.waitFor(t, r.ID, "completed", "failed"); st != "completed" {
		t.Fatalf("after the restart: %s", st)
	}
}

// The CLI with --server prints what it prints locally, and exits the same.
func TestCLIAgainstAServer(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	s := c.serve("--allow-script-models", "--workspaces", ws)
	c.env = append(c.env, "AGENTLOOP_SERVER="+s.url)
	out, errOut, code := c.run("", "run", "--model", "script:../../examples/scripts/hello.json", "say hi")
	if code != exitCompleted || !strings.Contains(out, "Hello! I'm a scripted model") || !strings.Contains(errOut, "completed (completed) after 1 steps") {
		t.Fatalf("run --server: exit %d\n%s\n%s", code, out, errOut)
	}
	list, _, code := c.run("", "sessions", "list", "--json")
	var sums []struct{ ID, Status string }
	if code != 0 || json.Unmarshal([]byte(list), &sums) != nil || len(sums) != 1 || sums[0].Status != "completed" {
		t.Fatalf("sessions list --server: %d %s", code, list)
	}
	show, _, _ := c.run("", "sessions", "show", sums[0].ID)
	if !strings.Contains(show, "status:    completed (completed)") {
		t.Fatalf("sessions show --server:\n%s", show)
	}
	// A session waiting for approval, approved over the server.
	script := writeSteps(t, `{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"hi"}}]}`, `{"text":"wrote a.txt"}`)
	_, errOut, code = c.run("", "run", "--model", "script:"+script, "write a.txt")
	if code != exitPaused || !strings.Contains(errOut, "agentloop sessions approve") {
		t.Fatalf("run needing approval: exit %d\n%s", code, errOut)
	}
	approve := regexp.MustCompile(`agentloop sessions approve (\S+) (\S+) (\S+)`).FindStringSubmatch(errOut)
	if pending, _, _ := c.run("", "sessions", "approvals"); !strings.Contains(pending, approve[0]) {
		t.Fatalf("sessions approvals --server:\n%s", pending)
	}
	out, errOut, code = c.run("", "sessions", "approve", approve[1], approve[2], approve[3])
	if code != exitCompleted || !strings.Contains(out, "wrote a.txt") {
		t.Fatalf("approve --server: exit %d\n%s\n%s", code, out, errOut)
	}
	// Errors are the server's, with the same exit code.
	if _, errOut, code := c.run("", "sessions", "show", "nosuch"); code != exitFailed || !strings.Contains(errOut, "not found") {
		t.Fatalf("unknown session: %d %s", code, errOut)
	}
	if _, errOut, code := c.run("", "sessions", "pause", sums[0].ID); code != exitFailed || !strings.Contains(errOut, "has ended") {
		t.Fatalf("pausing an ended session: %d %s", code, errOut)
	}
}

// serve --demo starts a session a newcomer can watch, and it completes.
func TestServeDemo(t *testing.T) {
	c := newCLI(t)
	s := c.serve("--demo", "--workspaces", t.TempDir())
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m = regexp.MustCompile(`watch it at (http://\S+/#/s/(\S+))`).FindStringSubmatch(s.errText())
	}
	if m == nil {
		t.Fatalf("no demo URL:\n%s", s.errText())
	}
	if st := s.waitFor(t, m[2], "completed", "failed", "error"); st != "completed" {
		t.Fatalf("the demo session ended %s", st)
	}
	resp, err := http.Get(s.url + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the dashboard: %v %v", err, resp)
	}
	resp.Body.Close()
}
