package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/sqlite"
)

// protocolAPI serves the API as agentloop serve does (token deltas
// included) with a scripted model: it plans, lists the workspace,
// updates the plan and answers, streaming its text in small deltas.
func protocolAPI(t *testing.T, approval string) (*api, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	deltas := &feed.Deltas{}
	workspaces := &server.Workspaces{}
	resolver := &assemble.Resolver{OnWorkspace: workspaces.Track}
	rc := resolver.RunnerConfig(st, price.Default())
	rc.OnDelta = func(id string, d model.Delta) { deltas.Publish(feed.Delta{SessionID: id, Delta: d}) }
	svc, err := service.New(service.Config{Store: st, Runner: rc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o700)
	scriptPath := filepath.Join(dir, "plan.json")
	os.WriteFile(scriptPath, []byte(planScript), 0o600)
	h := server.New(server.Config{Service: svc, Keys: st, Deltas: deltas, Heartbeat: 50 * time.Millisecond, Workspaces: workspaces,
		Defaults: server.Defaults{Approval: approval, Workspaces: ws, AllowScripts: true, Model: "script:" + scriptPath}})
	t.Cleanup(h.Observe(st))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL, st: st, dir: dir, keys: map[string]string{}}, dir
}

const planScript = `{"stream_chunk": 3, "steps": [
 {"text": "I will plan first.", "tool_calls": [{"name": "update_plan", "arguments": {"action": "create", "goal": "look around", "steps": ["list the files", "answer"]}}]},
 {"text": "Listing.", "tool_calls": [{"name": "list_dir", "arguments": {}}, {"name": "update_plan", "arguments": {"action": "update_step", "step": 1, "status": "completed", "result": "empty"}}]},
 {"tool_calls": [{"name": "update_plan", "arguments": {"action": "update_step", "step": 2, "status": "completed"}}, {"name": "update_plan", "arguments": {"action": "complete"}}]},
 {"text": "The workspace is empty; nothing to report. ✓"}
]}`

// writeScript writes a scripted model of the test's own.
func writeScript(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("s-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sseData posts (or gets, with body "") path and returns the data of
// every SSE frame until the server ends the stream.
func sseData(t *testing.T, a *api, method, path, body string) (int, http.Header, []string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, a.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var frames []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			frames = append(frames, d)
		}
	}
	if resp.StatusCode >= 300 && len(frames) == 0 {
		return resp.StatusCode, resp.Header, nil
	}
	return resp.StatusCode, resp.Header, frames
}

// logOf is a session's log as the API pages it.
type logEvent struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func logOf(t *testing.T, a *api, id string) []logEvent {
	t.Helper()
	code, out, _ := a.do("GET", "/v1/sessions/"+id+"/events?limit=1000", "", "")
	if code != 200 {
		t.Fatalf("events: %d %s", code, out)
	}
	var page struct{ Events []logEvent }
	json.Unmarshal([]byte(out), &page)
	return page.Events
}

// logWant is what a client should assemble from a log.
type logWant struct {
	texts   []string          // assistant replies' text, in order
	calls   []string          // "id name args"
	results map[string]string // call id → output
	plan    map[string]any
}

func wantFromLog(t *testing.T, evs []logEvent) logWant {
	w := logWant{results: map[string]string{}}
	for _, ev := range evs {
		switch ev.Type {
		case "model.responded":
			var d struct {
				Text      string
				ToolCalls []struct {
					ID, Name  string
					Arguments json.RawMessage
				} `json:"tool_calls"`
			}
			json.Unmarshal(ev.Data, &d)
			if d.Text != "" {
				w.texts = append(w.texts, d.Text)
			}
			for _, c := range d.ToolCalls {
				w.calls = append(w.calls, c.ID+" "+c.Name+" "+compact(t, string(c.Arguments)))
			}
		case "tool.finished":
			var d struct {
				CallID string `json:"call_id"`
				Output string
			}
			json.Unmarshal(ev.Data, &d)
			w.results[d.CallID] = d.Output
		case "plan.updated":
			var d map[string]any
			json.Unmarshal(ev.Data, &d)
			delete(d, "reason")
			for _, s := range d["steps"].([]any) {
				if m := s.(map[string]any); m["status"] == nil || m["status"] == "" {
					m["status"] = "pending"
				}
			}
			w.plan = d
		}
	}
	return w
}

func compact(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %q", s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// aguiAssembled is what an AG-UI client holds after a run: it applies
// the events as @ag-ui/client does and checks their order.
type aguiAssembled struct {
	types    []string
	messages []map[string]any // id, role, content, toolCalls
	calls    []string
	results  map[string]string
	state    any
	finished map[string]any
	errored  map[string]any
}

func assembleAGUI(t *testing.T, frames []string) aguiAssembled {
	t.Helper()
	as := aguiAssembled{results: map[string]string{}}
	byID := map[string]map[string]any{}
	open, steps := map[string]bool{}, []string{}
	args := map[string]*strings.Builder{}
	names := map[string]string{}
	for i, f := range frames {
		var ev map[string]any
		if err := json.Unmarshal([]byte(f), &ev); err != nil {
			t.Fatalf("frame %d is not JSON: %s", i, f)
		}
		typ := ev["type"].(string)
		as.types = append(as.types, typ)
		if i == 0 && typ != "RUN_STARTED" {
			t.Fatalf("the first event is %s, not RUN_STARTED", typ)
		}
		if as.finished != nil || as.errored != nil {
			t.Fatalf("%s after the run ended", typ)
		}
		str := func(k string) string { s, _ := ev[k].(string); return s }
		switch typ {
		case "TEXT_MESSAGE_START":
			id := str("messageId")
			if open[id] {
				t.Fatalf("message %s started twice", id)
			}
			open[id] = true
			m := map[string]any{"id": id, "role": str("role"), "content": ""}
			byID[id] = m
			as.messages = append(as.messages, m)
		case "TEXT_MESSAGE_CONTENT":
			id := str("messageId")
			if !open[id] {
				t.Fatalf("content for message %s, which is not open", id)
			}
			byID[id]["content"] = byID[id]["content"].(string) + str("delta")
		case "TEXT_MESSAGE_END":
			if !open[str("messageId")] {
				t.Fatalf("end of message %s, which is not open", str("messageId"))
			}
			delete(open, str("messageId"))
		case "MESSAGES_SNAPSHOT":
			as.messages = nil
			byID = map[string]map[string]any{}
			for _, m := range ev["messages"].([]any) {
				mm := m.(map[string]any)
				byID[mm["id"].(string)] = mm
				as.messages = append(as.messages, mm)
			}
		case "TOOL_CALL_START":
			id := str("toolCallId")
			args[id], names[id] = &strings.Builder{}, str("toolCallName")
		case "TOOL_CALL_ARGS":
			args[str("toolCallId")].WriteString(str("delta"))
		case "TOOL_CALL_END":
			id := str("toolCallId")
			as.calls = append(as.calls, id+" "+names[id]+" "+compact(t, args[id].String()))
		case "TOOL_CALL_RESULT":
			as.results[str("toolCallId")] = str("content")
		case "STATE_SNAPSHOT":
			as.state = ev["snapshot"]
		case "STATE_DELTA":
			as.state = applyPatch(t, as.state, ev["delta"].([]any))
		case "STEP_STARTED":
			steps = append(steps, str("stepName"))
		case "STEP_FINISHED":
			if len(steps) == 0 || steps[len(steps)-1] != str("stepName") {
				t.Fatalf("STEP_FINISHED %q does not close the open step %v", str("stepName"), steps)
			}
			steps = steps[:len(steps)-1]
		case "RUN_FINISHED":
			as.finished = ev
		case "RUN_ERROR":
			as.errored = ev
		case "RUN_STARTED":
			if i != 0 {
				t.Fatal("RUN_STARTED twice")
			}
		default:
			t.Fatalf("unexpected event %s", f)
		}
	}
	if len(open) > 0 || len(steps) > 0 {
		t.Fatalf("the run ended with messages %v or steps %v open", open, steps)
	}
	return as
}

// applyPatch applies a JSON Patch of add, remove and replace.
func applyPatch(t *testing.T, doc any, ops []any) any {
	t.Helper()
	for _, o := range ops {
		op := o.(map[string]any)
		path := strings.Split(op["path"].(string), "/")[1:]
		if len(path) == 0 {
			doc = op["value"]
			continue
		}
		parent := doc
		for _, k := range path[:len(path)-1] {
			switch p := parent.(type) {
			case map[string]any:
				parent = p[k]
			case []any:
				n, _ := strconv.Atoi(k)
				parent = p[n]
			}
		}
		last := path[len(path)-1]
		switch p := parent.(type) {
		case map[string]any:
			if op["op"] == "remove" {
				delete(p, last)
			} else {
				p[last] = op["value"]
			}
		case []any:
			// Arrays are changed in place through their parent.
			holder, key := doc, path[len(path)-2]
			for _, k := range path[:len(path)-2] {
				holder = holder.(map[string]any)[k]
			}
			switch op["op"] {
			case "add":
				p = append(p, op["value"])
			case "remove":
				n, _ := strconv.Atoi(last)
				p = append(p[:n], p[n+1:]...)
			case "replace":
				n, _ := strconv.Atoi(last)
				p[n] = op["value"]
			}
			holder.(map[string]any)[key] = p
		default:
			t.Fatalf("patch path %s: no such parent", op["path"])
		}
	}
	return doc
}

func assistantTexts(msgs []map[string]any) []string {
	var out []string
	for _, m := range msgs {
		if m["role"] == "assistant" && m["content"] != nil && m["content"] != "" {
			out = append(out, m["content"].(string))
		}
	}
	return out
}

func TestAGUIRunMatchesTheLog(t *testing.T) {
	a, _ := protocolAPI(t, "auto")
	body := `{"threadId":"thread-1","runId":"run-1","messages":[{"id":"u1","role":"user","content":"look around"}],"tools":[],"context":[],"state":{}}`
	code, hdr, frames := sseData(t, a, "POST", "/v1/agui", body)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("POST /v1/agui: %d %v %v", code, hdr, frames)
	}
	got := assembleAGUI(t, frames)
	if got.finished == nil {
		t.Fatalf("no RUN_FINISHED: %v", got.types)
	}
	if got.finished["threadId"] != "thread-1" || got.finished["runId"] != "run-1" {
		t.Errorf("RUN_FINISHED names %v/%v", got.finished["threadId"], got.finished["runId"])
	}
	result := got.finished["result"].(map[string]any)
	id := result["session_id"].(string)
	if result["status"] != "completed" || got.finished["outcome"].(map[string]any)["type"] != "success" {
		t.Errorf("RUN_FINISHED %v", got.finished)
	}
	want := wantFromLog(t, logOf(t, a, id))
	if g := assistantTexts(got.messages); !reflect.DeepEqual(g, want.texts) {
		t.Errorf("assistant texts\n got %q\nwant %q", g, want.texts)
	}
	if !reflect.DeepEqual(got.calls, want.calls) {
		t.Errorf("tool calls\n got %q\nwant %q", got.calls, want.calls)
	}
	if !reflect.DeepEqual(got.results, want.results) {
		t.Errorf("tool results\n got %q\nwant %q", got.results, want.results)
	}
	if !reflect.DeepEqual(got.state, map[string]any{"plan": want.plan}) {
		t.Errorf("state\n got %v\nwant %v", got.state, map[string]any{"plan": want.plan})
	}
	if len(want.texts) != 3 || len(want.calls) != 5 || len(want.results) != 5 {
		t.Fatalf("the script did not run as written: %+v", want)
	}
	steps := 0
	for _, typ := range got.types {
		if typ == "STEP_STARTED" {
			steps++
		}
	}
	if steps != 4 {
		t.Errorf("%d steps, want one per iteration (4)", steps)
	}

	// Following the session shows the same run, the user's task first.
	_, _, frames = sseData(t, a, "GET", "/v1/sessions/"+id+"/agui", "")
	follow := assembleAGUI(t, frames)
	if len(follow.messages) == 0 || follow.messages[0]["role"] != "user" || follow.messages[0]["content"] != "look around" {
		t.Errorf("following: the first message is %v, not the user's task", follow.messages)
	}
	if g := assistantTexts(follow.messages); !reflect.DeepEqual(g, want.texts) {
		t.Errorf("following: assistant texts %q, want %q", g, want.texts)
	}
	if !reflect.DeepEqual(follow.calls, want.calls) || !reflect.DeepEqual(follow.state, got.state) || follow.finished == nil {
		t.Errorf("following differs from the run: %+v", follow)
	}
}

func TestAGUIThreadWaitsAndGoesOnWithTheNextRun(t *testing.T) {
	a, dir := protocolAPI(t, "ask")
	script := writeScript(t, dir, `{"steps": [
	 {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which file?"}}]},
	 {"tool_calls": [{"id": "w1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "hi"}}]},
	 {"text": "Wrote notes.txt."}
	]}`)
	fp := `"forwardedProps":{"model":"script:` + script + `"}`
	code, _, frames := sseData(t, a, "POST", "/v1/agui", `{"threadId":"t2","runId":"r1","messages":[{"id":"u1","role":"user","content":"write notes"}],`+fp+`}`)
	if code != 200 {
		t.Fatalf("run 1: %d %v", code, frames)
	}
	run1 := assembleAGUI(t, frames)
	if run1.finished == nil || run1.finished["result"].(map[string]any)["status"] != "waiting" || run1.finished["result"].(map[string]any)["question"] != "Which file?" {
		t.Fatalf("run 1 did not end waiting for the question: %v", run1.finished)
	}
	// The next run on the thread answers; the session asks to write.
	_, _, frames = sseData(t, a, "POST", "/v1/agui", `{"threadId":"t2","runId":"r2","messages":[{"id":"u1","role":"user","content":"write notes"},{"id":"u2","role":"user","content":"notes.txt"}]}`)
	run2 := assembleAGUI(t, frames)
	outcome, _ := run2.finished["outcome"].(map[string]any)
	if outcome == nil || outcome["type"] != "interrupt" {
		t.Fatalf("run 2 did not end interrupted for an approval: %v", run2.finished)
	}
	intr := outcome["interrupts"].([]any)[0].(map[string]any)
	if intr["id"] != "w1" || intr["toolCallId"] != "w1" || intr["reason"] != "tool_approval" {
		t.Errorf("interrupt %v", intr)
	}
	if !reflect.DeepEqual(run2.calls, []string{`w1 write_file {"content":"hi","path":"notes.txt"}`}) {
		t.Errorf("run 2 calls %q", run2.calls)
	}
	// Resuming approves the call: it runs and the session completes.
	_, _, frames = sseData(t, a, "POST", "/v1/agui", `{"threadId":"t2","runId":"r3","messages":[],"resume":[{"interruptId":"w1","status":"resolved","payload":{"approved":true}}]}`)
	run3 := assembleAGUI(t, frames)
	if run3.finished == nil || run3.finished["result"].(map[string]any)["status"] != "completed" {
		t.Fatalf("run 3: %v %v", run3.types, run3.finished)
	}
	if _, ok := run3.results["w1"]; !ok || !reflect.DeepEqual(assistantTexts(run3.messages), []string{"Wrote notes.txt."}) {
		t.Errorf("run 3: results %v, texts %q", run3.results, assistantTexts(run3.messages))
	}
	id := run3.finished["result"].(map[string]any)["session_id"].(string)
	// A resume naming no pending approval is refused, nothing changes.
	code, _, _ = sseData(t, a, "POST", "/v1/agui", `{"threadId":"t2","runId":"r4","messages":[],"resume":[{"interruptId":"nope","status":"resolved"}]}`)
	if code != http.StatusConflict {
		t.Errorf("a resume of a finished thread: %d, want 409", code)
	}
	if evs := logOf(t, a, id); evs[len(evs)-1].Type != "session.ended" {
		t.Errorf("the log goes on after the refused resume: %s", evs[len(evs)-1].Type)
	}
}

func TestAGUIRefusesWhatItCannotRun(t *testing.T) {
	a, _ := protocolAPI(t, "auto")
	for _, c := range []struct {
		body, want string
		code       int
	}{
		{`{"runId":"r","messages":[]}`, "threadId", 400},
		{`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x"}],"tools":[{"name":"confirm","description":"ask"}]}`, "tools offered by the client", 400},
		{`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x"}],"forwardedProps":{"modle":"x"}}`, "forwardedProps", 400},
		{`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"http://x"}}]}]}`, "text only", 400},
		{`{"threadId":"t","runId":"r","messages":[]}`, "say what to do", 400},
		{`{"threadId":`, "not valid JSON", 400},
	} {
		code, out, _ := a.do("POST", "/v1/agui", "", c.body)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%s: %d %s, want %d naming %q", c.body, code, out, c.code, c.want)
		}
	}
	if code, out, _ := a.do("GET", "/v1/sessions/nope/agui", "", ""); code != 404 {
		t.Errorf("following a session that does not exist: %d %s", code, out)
	}
	if code, out, _ := a.do("GET", "/v1/sessions", "", ""); code != 200 || strings.Contains(out, `"id"`) {
		t.Errorf("a refused run started a session: %s", out)
	}
}
