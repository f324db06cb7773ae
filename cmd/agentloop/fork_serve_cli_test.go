package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/teststop"
)

// holdModels is an OpenAI-compatible server on loopback. "orig" writes
// f{(i-1)%3}.txt = "step i" at step i for 8 steps, then answers. "hold"
// blocks its first request until release is closed (holding is closed
// once it arrived), then writes forked.txt = "hold\n" once and answers.
// It keeps "hold"'s requests.
type holdModels struct {
	holding, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	held             [][]any
}

func startHoldModels(t *testing.T) (*httptest.Server, *holdModels) {
	hm := &holdModels{holding: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Model    string `json:"model"`
			Messages []any  `json:"messages"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request: %v", err)
		}
		n := assistantTurns(body.Messages)
		if body.Model == "hold" {
			hm.mu.Lock()
			hm.held = append(hm.held, body.Messages)
			hm.mu.Unlock()
			hm.once.Do(func() { close(hm.holding) })
			select {
			case <-hm.release:
			case <-r.Context().Done():
				return
			}
		}
		var msg map[string]any
		switch {
		case body.Model == "orig" && n < 8:
			msg = writeCall(n+1, fmt.Sprintf("f%d.txt", n%3), fmt.Sprintf("step %d\n", n+1))
		case body.Model == "hold" && n == 5:
			msg = writeCall(n+1, "forked.txt", "hold\n")
		default:
			msg = map[string]any{"role": "assistant", "content": body.Model + " done"}
		}
		// Streamed: the server's sessions ask for a stream.
		replyChat(w, body.Model, true, msg)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-hm.release:
		default:
			close(hm.release)
		}
	})
	return srv, hm
}

// forkState is what the tests read of a session's state.
type forkState struct {
	Status     string
	Answer     string
	Workspace  string
	Seq        int64
	ForkedFrom *struct {
		ID        string `json:"id"`
		Iteration int    `json:"iteration"`
	} `json:"forked_from"`
}

// The front door for forks, through the built binary and real
// HTTP: a session edits files over 8 steps on `agentloop serve` (which
// keeps checkpoints by default); a fork at step 5 with another scripted
// model runs to completion while a second fork of the same session, at
// the same step with another model, waits in its model call — two forks
// side by side — and then completes too. Each fork has step 5's files
// plus its own, its log names forked_from, the original's log and files
// are unchanged, the session lists its forks, and compare (HTTP, and the
// CLI against the server and against the database) shows them side by
// side.
func TestForkOnTheServer(t *testing.T) {
	srv, hm := startHoldModels(t)
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=k")
	root := t.TempDir()
	s := c.serve("--yes", "--allow-script-models", "--workspaces", root, "--model", "openai/orig", "--base-url", srv.URL+"/v1")
	defer func() { s.cmd.Process.Signal(syscall.SIGTERM); s.wait(t) }()
	ws := filepath.Join(root, "edits")
	id := startEditSession(t, s, ws)
	if st := s.waitFor(t, id, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("the session ended %s", st)
	}
	var origEvents, origEventsAfter json.RawMessage
	fetchJSON(t, s.url+"/v1/sessions/"+id+"/events?limit=1000", &origEvents)
	origFiles := readTree(t, ws)
	stepFive := map[string]string{"seed.txt": "seed\n", "f0.txt": "step 4\n", "f1.txt": "step 5\n", "f2.txt": "step 3\n"}

	script := filepath.Join(t.TempDir(), "fork.json")
	os.WriteFile(script, []byte(`{"steps":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"forked.txt","content":"scripted\n"}}]},
		{"tool_calls":[{"name":"write_file","arguments":{"path":"more.txt","content":"more\n"}}]},
		{"text":"scripted fork done"}]}`), 0o644)

	// Fork A waits in its first model call until released.
	code, out := s.post(t, "/v1/sessions/"+id+"/fork", `{"at":5,"model":"openai/hold","message":"hold on"}`)
	if code != 201 {
		t.Fatalf("fork A: %d %s", code, out)
	}
	var forkA struct{ ID, Status, URL string }
	json.Unmarshal([]byte(out), &forkA)
	if forkA.Status != "running" || forkA.URL != "/v1/sessions/"+forkA.ID {
		t.Fatalf("fork A's answer: %s", out)
	}
	select {
	case <-hm.holding:
	case <-time.After(time.Minute):
		t.Fatalf("fork A never called its model:\n%s", s.errText())
	}
	// Fork B, with another scripted model, runs to completion meanwhile.
	code, out = s.post(t, "/v1/sessions/"+id+"/fork", fmt.Sprintf(`{"at":5,"model":"script:%s"}`, script))
	if code != 201 {
		t.Fatalf("fork B: %d %s", code, out)
	}
	var forkB struct{ ID string }
	json.Unmarshal([]byte(out), &forkB)
	if st := s.waitFor(t, forkB.ID, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("fork B ended %s\n%s", st, s.errText())
	}
	if st, _ := s.state(t, forkA.ID); st != "running" {
		t.Fatalf("fork A is %s while its model call is held", st)
	}
	close(hm.release)
	if st := s.waitFor(t, forkA.ID, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("fork A ended %s", st)
	}

	for _, f := range []struct {
		id, answer string
		files      map[string]string
	}{
		{forkA.ID, "hold done", map[string]string{"forked.txt": "hold\n"}},
		{forkB.ID, "scripted fork done", map[string]string{"forked.txt": "scripted\n", "more.txt": "more\n"}},
	} {
		var st forkState
		fetchJSON(t, s.url+"/v1/sessions/"+f.id, &st)
		if st.Answer != f.answer || st.ForkedFrom == nil || st.ForkedFrom.ID != id || st.ForkedFrom.Iteration != 5 {
			t.Fatalf("fork %s: answer %q, forked_from %+v", f.id, st.Answer, st.ForkedFrom)
		}
		if st.Workspace != filepath.Join(filepath.Dir(ws), "edits-fork-"+f.id) {
			t.Fatalf("fork %s works in %s", f.id, st.Workspace)
		}
		want := map[string]string{}
		for k, v := range stepFive {
			want[k] = v
		}
		for k, v := range f.files {
			want[k] = v
		}
		if got := readTree(t, st.Workspace); !reflect.DeepEqual(got, want) {
			t.Fatalf("fork %s files:\n got %v\nwant %v", f.id, got, want)
		}
	}
	// Fork A's model read exactly steps 1-5 and the message.
	hm.mu.Lock()
	first := hm.held[0]
	hm.mu.Unlock()
	assistants := 0
	for _, m := range first {
		if m.(map[string]any)["role"] == "assistant" {
			assistants++
		}
	}
	if last := first[len(first)-1].(map[string]any); assistants != 5 || last["role"] != "user" || last["content"] != "hold on" {
		t.Fatalf("fork A's model read %d steps, ending with %v", assistants, last)
	}

	// The original is unchanged: log and files.
	fetchJSON(t, s.url+"/v1/sessions/"+id+"/events?limit=1000", &origEventsAfter)
	if string(origEvents) != string(origEventsAfter) {
		t.Fatal("forking changed the original's log")
	}
	if got := readTree(t, ws); !reflect.DeepEqual(got, origFiles) {
		t.Fatalf("forking changed the original's files: %v", got)
	}

	// The fork tree's data: the original's direct forks.
	var page struct {
		Sessions []struct {
			ID         string
			ForkedFrom struct{ ID string } `json:"forked_from"`
		}
	}
	fetchJSON(t, s.url+"/v1/sessions?forked_from="+id, &page)
	if len(page.Sessions) != 2 || page.Sessions[0].ID != forkB.ID || page.Sessions[1].ID != forkA.ID || page.Sessions[0].ForkedFrom.ID != id {
		t.Fatalf("forks of %s: %+v", id, page.Sessions)
	}
	fetchJSON(t, s.url+"/v1/sessions?forked_from="+forkA.ID, &page)
	if len(page.Sessions) != 0 {
		t.Fatalf("forks of a fork nobody forked: %+v", page.Sessions)
	}
	for _, where := range [][]string{{}, {"--server", s.url}} {
		out, errOut, code := c.run("", append([]string{"sessions", "list", "--forked-from", id, "--json"}, where...)...)
		if code != 0 || !strings.Contains(out, forkA.ID) || !strings.Contains(out, forkB.ID) || strings.Count(out, `"forked_from"`) != 2 {
			t.Fatalf("sessions list --forked-from %v: %d\n%s\n%s", where, code, out, errOut)
		}
		// The other filters hold with it, against the server as here.
		for _, filter := range [][]string{{"--status", "failed"}, {"--unfinished"}, {"--status", "completed", "--unfinished"}, {"--label", "team=none"}} {
			out, errOut, code := c.run("", append(append([]string{"sessions", "list", "--forked-from", id}, filter...), where...)...)
			if code != 0 || strings.Contains(out, forkA.ID) || strings.Contains(out, forkB.ID) || !strings.Contains(errOut, "no session was forked from "+id) {
				t.Fatalf("sessions list --forked-from %s %v: %d\n%s\n%s", filter, where, code, out, errOut)
			}
		}
		out, errOut, code = c.run("", append([]string{"sessions", "list", "--forked-from", id, "--status", "completed"}, where...)...)
		if code != 0 || !strings.Contains(out, forkA.ID) || !strings.Contains(out, forkB.ID) {
			t.Fatalf("sessions list --forked-from --status completed %v: %d\n%s\n%s", where, code, out, errOut)
		}
	}

	// Compare: over HTTP, and with the CLI against the server and the database.
	var cmp struct {
		A, B struct {
			ID, Answer string
			Steps      int
			ForkedFrom *struct{ ID string } `json:"forked_from"`
		}
		Steps []struct {
			Number int
			A, B   *struct{ Status string }
		}
		Files []struct{ Path, Change string }
		Diff  string
	}
	if code := fetchJSON(t, s.url+"/v1/sessions/compare?a="+id+"&b="+forkB.ID, &cmp); code != 200 {
		t.Fatalf("compare: %d", code)
	}
	if cmp.A.ID != id || cmp.B.ID != forkB.ID || cmp.A.Answer != "orig done" || cmp.B.Answer != "scripted fork done" || cmp.A.ForkedFrom != nil || cmp.B.ForkedFrom.ID != id ||
		cmp.A.Steps != 9 || cmp.B.Steps != 8 || len(cmp.Steps) != 9 || cmp.Steps[8].B != nil || cmp.Steps[7].B == nil {
		t.Fatalf("compare: %+v", cmp)
	}
	if fmt.Sprint(cmp.Files) != "[{f0.txt modified} {f1.txt modified} {f2.txt modified} {forked.txt added} {more.txt added}]" ||
		!strings.Contains(cmp.Diff, "-step 7\n+step 4\n") || !strings.Contains(cmp.Diff, "+++ b/forked.txt\n") {
		t.Fatalf("compare files %v, diff:\n%s", cmp.Files, cmp.Diff)
	}
	for _, where := range [][]string{{"--server", s.url}, {}} {
		out, errOut, code := c.run("", append([]string{"sessions", "compare", id, forkB.ID}, where...)...)
		if code != 0 || !strings.Contains(out, "fork of "+id+" at step 5") || !strings.Contains(out, "= same as A") ||
			!strings.Contains(out, "added     forked.txt") || !strings.Contains(out, "+scripted") {
			t.Fatalf("sessions compare %v: %d\n%s\n%s", where, code, out, errOut)
		}
	}
	if code, _ := s.post(t, "/v1/sessions/"+id+"/fork", `{"at":12}`); code != 400 {
		t.Fatalf("a fork past the last step: %d", code)
	}
	// The CLI says so with the steps a fork can start from, and forks nothing.
	if _, errOut, code := c.run("", "sessions", "fork", id, "--at", "12", "--server", s.url); code == 0 ||
		!strings.Contains(errOut, "no finished step 12") || !strings.Contains(errOut, "its finished steps: 1-9") {
		t.Fatalf("sessions fork --at 12 --server: %d\n%s", code, errOut)
	}

	// The CLI forks on the server and follows the fork from its own first
	// step: the copied steps are not printed again.
	out, errOut, code := c.run("", "sessions", "fork", id, "--at", "5", "--model", "script:"+script, "--server", s.url)
	if code != 0 || !strings.Contains(out, "scripted fork done") || !strings.Contains(errOut, "forked from "+id+" at step 5") ||
		!strings.Contains(errOut, "step 6: write_file forked.txt") || strings.Contains(errOut, "step 5:") {
		t.Fatalf("sessions fork --server: %d\n%s\n%s", code, out, errOut)
	}
}

// A fork killed by SIGKILL before it is recorded leaves files and a
// note, and no session; the restarted server removes them. A fork killed
// right after it was recorded is a session: the restarted server runs it
// to completion in the workspace it was given.
func TestForkKilledOnTheServer(t *testing.T) {
	srv, _ := startHoldModels(t)
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=k")
	root := t.TempDir()
	serveArgs := []string{"--yes", "--workspaces", root, "--model", "openai/orig", "--base-url", srv.URL + "/v1"}
	s := c.serve(serveArgs...)
	code, out := s.post(t, "/v1/sessions", `{"task":"edit the files"}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, out)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(out), &created)
	id := created.ID
	if st := s.waitFor(t, id, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("the session ended %s", st)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
	checkpoints := filepath.Join(filepath.Dir(c.db), "checkpoints")

	type note struct{ ID, Workspace string }
	killedAt := func(point string) note {
		t.Helper()
		c.env = append(c.env, teststop.Env+"="+point)
		s := c.serve(serveArgs...)
		c.env = c.env[:len(c.env)-1]
		posted := make(chan struct{})
		go func() {
			defer close(posted)
			// The request never gets an answer: the server is killed.
			http.Post(s.url+"/v1/sessions/"+id+"/fork", "application/json", strings.NewReader(`{"at":4}`))
		}()
		for deadline := time.Now().Add(time.Minute); !strings.Contains(s.errText(), "stopped at "+point); {
			if time.Now().After(deadline) {
				t.Fatalf("the fork never reached %s:\n%s", point, s.errText())
			}
			time.Sleep(10 * time.Millisecond)
		}
		s.cmd.Process.Signal(syscall.SIGKILL)
		s.wait(t)
		<-posted
		notes, _ := filepath.Glob(filepath.Join(checkpoints, "*.fork.json"))
		if len(notes) != 1 {
			t.Fatalf("fork notes after the kill at %s: %v", point, notes)
		}
		b, _ := os.ReadFile(notes[0])
		var n note
		json.Unmarshal(b, &n)
		return n
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	// Killed before the commit: files, no session; the restart removes them.
	cut := killedAt("fork-before-commit")
	if !exists(cut.Workspace) || !exists(filepath.Join(checkpoints, cut.ID+".git")) || readTree(t, cut.Workspace)["f0.txt"] != "step 4\n" {
		t.Fatalf("before the restart: the fork's workspace %s and shadow repository should be there", cut.Workspace)
	}
	s = c.serve(serveArgs...)
	if exists(cut.Workspace) || exists(filepath.Join(checkpoints, cut.ID+".git")) || exists(filepath.Join(checkpoints, cut.ID+".fork.json")) {
		t.Fatalf("the restarted server left what the unrecorded fork %s wrote", cut.ID)
	}
	if partial, _ := filepath.Glob(filepath.Join(filepath.Dir(cut.Workspace), ".*.export-*")); len(partial) != 0 {
		t.Fatalf("half-exported copies left: %v", partial)
	}
	if code := fetchJSON(t, s.url+"/v1/sessions/"+cut.ID, nil); code != 404 {
		t.Fatalf("the unrecorded fork answers %d", code)
	}
	var page struct{ Sessions []struct{ ID string } }
	fetchJSON(t, s.url+"/v1/sessions", &page)
	if len(page.Sessions) != 1 {
		t.Fatalf("sessions after the restart: %+v", page.Sessions)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)

	// Killed after the commit: the restarted server runs the fork.
	done := killedAt("fork-after-commit")
	s = c.serve(serveArgs...)
	defer func() { s.cmd.Process.Signal(syscall.SIGTERM); s.wait(t) }()
	if st := s.waitFor(t, done.ID, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("the recorded fork ended %s\n%s", st, s.errText())
	}
	var st forkState
	fetchJSON(t, s.url+"/v1/sessions/"+done.ID, &st)
	if st.Workspace != done.Workspace || st.ForkedFrom == nil || st.ForkedFrom.Iteration != 4 {
		t.Fatalf("the recovered fork: %+v", st)
	}
	// Step 4's files, then steps 5-8 written again by "orig".
	want := map[string]string{"f0.txt": "step 7\n", "f1.txt": "step 8\n", "f2.txt": "step 6\n"}
	if got := readTree(t, done.Workspace); !reflect.DeepEqual(got, want) {
		t.Fatalf("the recovered fork's files %v, want %v", got, want)
	}
	if exists(filepath.Join(checkpoints, done.ID+".fork.json")) {
		t.Fatal("the recorded fork's note outlived the restart")
	}
	// The fork's files belong to whoever the original's belong to: a
	// server running as root gives both to the sandbox user.
	owner := func(p string) uint32 {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return info.Sys().(*syscall.Stat_t).Uid
	}
	if o := owner(filepath.Join(root, id)); owner(done.Workspace) != o || owner(filepath.Join(done.Workspace, "f0.txt")) != o {
		t.Fatalf("the fork's workspace belongs to uid %d, its f0.txt to %d; the original's to %d", owner(done.Workspace), owner(filepath.Join(done.Workspace, "f0.txt")), o)
	}
}
