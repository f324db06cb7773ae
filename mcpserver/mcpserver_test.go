package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/mcpserver"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// env is an MCP client connected in process to a server over a real
// service and SQLite store, as `agentloop mcp` wires them.
type env struct {
	t   *testing.T
	cs  *mcp.ClientSession
	dir string // the sessions' workspace
}

func newEnv(t *testing.T, local func(*mcpserver.Local)) *env {
	t.Helper()
	tmp := t.TempDir()
	st, err := sqlite.Open(filepath.Join(tmp, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := service.New(service.Config{Store: st, Runner: (&assemble.Resolver{}).RunnerConfig(st, price.Default())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	dir := filepath.Join(tmp, "work")
	os.MkdirAll(dir, 0o700)
	l := mcpserver.Local{Service: svc, Dir: dir, Defaults: assemble.StartDefaults{Approval: "ask", AllowFiles: true,
		Model: "script:" + writeScript(t, tmp, `{"text":"Hello from the script."}`)}}
	if local != nil {
		local(&l)
	}
	srv := mcpserver.New(mcpserver.Config{Service: svc, Start: l.Start})
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &env{t: t, cs: cs, dir: dir}
}

// writeScript writes a scripted model's script of these steps.
func writeScript(t *testing.T, dir string, steps ...string) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "script-*.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, `{"steps":[%s]}`, strings.Join(steps, ","))
	return f.Name()
}

// call calls a tool that must succeed and returns its structured result.
func (e *env) call(name string, args map[string]any) map[string]any {
	e.t.Helper()
	res, err := e.cs.CallTool(e.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		e.t.Fatalf("%s: tool error: %s", name, text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return out
}

// refused calls a tool that must fail as a tool error, and returns its text.
func (e *env) refused(name string, args map[string]any) string {
	e.t.Helper()
	res, err := e.cs.CallTool(e.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("%s: %v (want a tool error, not a protocol error)", name, err)
	}
	if !res.IsError {
		e.t.Fatalf("%s succeeded, want a refusal: %v", name, res.StructuredContent)
	}
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestToolsHaveSchemas(t *testing.T) {
	e := newEnv(t, nil)
	list, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"start_session", "get_session", "wait_session", "list_sessions", "reply_session", "pause_session", "resume_session", "terminate_session", "decide_approval"}
	got := map[string]*mcp.Tool{}
	for _, tool := range list.Tools {
		got[tool.Name] = tool
	}
	for _, name := range want {
		tool := got[name]
		if tool == nil {
			t.Errorf("no tool %s (have %v)", name, got)
			continue
		}
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: description %q, input schema %v, output schema %v", name, tool.Description, tool.InputSchema, tool.OutputSchema)
		}
	}
	templates, err := e.cs.ListResourceTemplates(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, rt := range templates.ResourceTemplates {
		uris = append(uris, rt.URITemplate)
	}
	slices.Sort(uris)
	if strings.Join(uris, " ") != "agentloop://sessions/{id} agentloop://sessions/{id}/events" {
		t.Errorf("resource templates: %v", uris)
	}
}

func TestStartWaitAnswerAndLog(t *testing.T) {
	e := newEnv(t, nil)
	s := e.call("start_session", map[string]any{"task": "say hello", "wait_seconds": 60, "labels": map[string]string{"from": "mcp"}})
	if s["status"] != "completed" || s["reason"] != "completed" || s["answer"] != "Hello from the script." || s["timed_out"] != nil {
		t.Fatalf("start_session: %v", s)
	}
	id := s["id"].(string)
	if got := e.call("get_session", map[string]any{"id": id}); got["answer"] != "Hello from the script." || got["workspace"] != e.dir || got["last_seq"] != s["last_seq"] {
		t.Errorf("get_session: %v (workspace want %s)", got, e.dir)
	}
	if got := e.call("wait_session", map[string]any{"id": id, "timeout_seconds": 1}); got["status"] != "completed" || got["timed_out"] != nil {
		t.Errorf("wait_session on an ended session: %v", got)
	}
	list := e.call("list_sessions", map[string]any{"status": "completed"})
	sessions := list["sessions"].([]any)
	if len(sessions) != 1 || sessions[0].(map[string]any)["id"] != id {
		t.Errorf("list_sessions: %v", list)
	}
	if list := e.call("list_sessions", map[string]any{"status": "running"}); len(list["sessions"].([]any)) != 0 {
		t.Errorf("list_sessions running: %v", list)
	}

	res, err := e.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "agentloop://sessions/" + id + "/events"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(res.Contents[0].Text), "\n")
	var types []string
	for i, l := range lines {
		var ev struct {
			Seq  int64  `json:"seq"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq != int64(i+1) {
			t.Fatalf("event line %d: %v %q", i, err, l)
		}
		types = append(types, ev.Type)
	}
	if types[0] != "session.started" || types[len(types)-1] != "session.ended" || float64(len(lines)) != s["last_seq"] {
		t.Errorf("events resource: %v (last_seq %v)", types, s["last_seq"])
	}
	res, err = e.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "agentloop://sessions/" + id})
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Status string            `json:"status"`
		Answer string            `json:"answer"`
		Labels map[string]string `json:"labels"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &state); err != nil || state.Status != "completed" || state.Labels["from"] != "mcp" {
		t.Errorf("state resource: %v %+v", err, state)
	}
	if _, err := e.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "agentloop://sessions/nosuch/events"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("an unknown session's log: %v", err)
	}
}

func TestApprovalOverMCP(t *testing.T) {
	e := newEnv(t, nil)
	script := writeScript(t, t.TempDir(),
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"note.txt","content":"from mcp\n"}}]}`,
		`{"text":"wrote note.txt"}`)
	s := e.call("start_session", map[string]any{"task": "write a note", "model": "script:" + script, "wait_seconds": 60})
	id := s["id"].(string)
	pending, _ := s["pending_approvals"].([]any)
	if s["status"] != "waiting" || s["reason"] != "approval" || len(pending) != 1 {
		t.Fatalf("before approval: %v", s)
	}
	p := pending[0].(map[string]any)
	if p["tool"] != "write_file" || !strings.Contains(p["arguments"].(string), "note.txt") || p["args_hash"] == "" {
		t.Fatalf("pending approval: %v", p)
	}
	if msg := e.refused("decide_approval", map[string]any{"id": id, "call_id": "nosuch", "approve": true}); !strings.Contains(msg, p["call_id"].(string)) {
		t.Errorf("deciding an unknown call: %s", msg)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "note.txt")); err == nil {
		t.Fatal("the file was written before the approval")
	}
	d := e.call("decide_approval", map[string]any{"id": id, "call_id": p["call_id"], "approve": true})
	if d["applied"] != true {
		t.Fatalf("decide_approval: %v", d)
	}
	s = e.call("wait_session", map[string]any{"id": id, "timeout_seconds": 60})
	if s["status"] != "completed" || s["answer"] != "wrote note.txt" {
		t.Fatalf("after approval: %v", s)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "note.txt")); err != nil || string(b) != "from mcp\n" {
		t.Errorf("note.txt: %q %v", b, err)
	}
}

func TestControlsOverMCP(t *testing.T) {
	e := newEnv(t, nil)
	// A model call that does not return by itself: only a control ends it.
	slow := writeScript(t, t.TempDir(), `{"text":"never","delay":"1h"}`)
	s := e.call("start_session", map[string]any{"task": "think long", "model": "script:" + slow})
	id := s["id"].(string)
	if s["status"] != "running" {
		t.Fatalf("start without a wait: %v", s)
	}
	if w := e.call("wait_session", map[string]any{"id": id, "timeout_seconds": 0.05}); w["timed_out"] != true || w["status"] != "running" {
		t.Errorf("a wait that runs out: %v", w)
	}
	if r := e.call("pause_session", map[string]any{"id": id, "text": "lunch"}); r["applied"] != true {
		t.Errorf("pause_session: %v", r)
	}
	if r := e.call("terminate_session", map[string]any{"id": id, "text": "different_approach"}); r["applied"] != true {
		t.Errorf("terminate_session: %v", r)
	}
	s = e.call("wait_session", map[string]any{"id": id, "timeout_seconds": 60})
	if s["status"] != "terminated" || s["reason"] != "different_approach" {
		t.Fatalf("after terminate: %v", s)
	}
	if msg := e.refused("resume_session", map[string]any{"id": id}); !strings.Contains(msg, id) {
		t.Errorf("resuming an ended session: %s", msg)
	}

	// A question, answered with reply_session.
	ask := writeScript(t, t.TempDir(),
		`{"tool_calls":[{"name":"ask_user","arguments":{"question":"Which colour?"}}]}`,
		`{"text":"blue it is","expect":{"last_message_contains":"blue"}}`)
	s = e.call("start_session", map[string]any{"task": "pick a colour", "model": "script:" + ask, "wait_seconds": 60})
	if s["status"] != "waiting" || s["question"] != "Which colour?" {
		t.Fatalf("a question: %v", s)
	}
	e.refused("reply_session", map[string]any{"id": s["id"], "text": " "})
	e.call("reply_session", map[string]any{"id": s["id"], "text": "blue"})
	if s = e.call("wait_session", map[string]any{"id": s["id"]}); s["status"] != "completed" || s["answer"] != "blue it is" {
		t.Fatalf("after the reply: %v", s)
	}
}

// What POST /v1/sessions refuses, start_session refuses, with the same words.
func TestStartRefusesWhatTheServerDoesNotAllow(t *testing.T) {
	e := newEnv(t, func(l *mcpserver.Local) { l.Defaults.AllowFiles = false })
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"task": "x", "approval": "auto"}, `approval "auto" refused`},
		{map[string]any{"task": "x", "model": "script:/etc/passwd"}, "--allow-script-models"},
		{map[string]any{"task": "x", "workspace": "../elsewhere"}, "outside"},
		{map[string]any{"task": "x", "workspace": "/etc"}, "outside"},
		{map[string]any{}, "say what to do"},
		{map[string]any{"task": "x", "mode": "sideways"}, `mode "sideways"`},
		{map[string]any{"task": "x", "wait_seconds": -1}, "negative"},
	} {
		if msg := e.refused("start_session", c.args); !strings.Contains(msg, c.want) {
			t.Errorf("start_session %v: %q, want it to say %q", c.args, msg, c.want)
		}
	}
	if msg := e.refused("get_session", map[string]any{"id": "nosuch"}); !strings.Contains(msg, "nosuch") {
		t.Errorf("get_session of an unknown session: %s", msg)
	}
	if msg := e.refused("get_session", map[string]any{"id": "../x"}); !strings.Contains(msg, "not a session ID") {
		t.Errorf("get_session of a bad ID: %s", msg)
	}
	if msg := e.refused("list_sessions", map[string]any{"status": "sleeping"}); !strings.Contains(msg, "sleeping") {
		t.Errorf("list_sessions with a bad status: %s", msg)
	}
	list := e.call("list_sessions", nil)
	if n := len(list["sessions"].([]any)); n != 0 {
		t.Errorf("refused starts left %d sessions", n)
	}
}

// With RunUnasked (agentloop mcp --yes) tools run without asking.
func TestRunUnasked(t *testing.T) {
	e := newEnv(t, func(l *mcpserver.Local) { l.RunUnasked = true })
	script := writeScript(t, t.TempDir(),
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"sub/a.txt","content":"a"}}]}`,
		`{"text":"done"}`)
	os.MkdirAll(filepath.Join(e.dir, "sub"), 0o700)
	s := e.call("start_session", map[string]any{"task": "write", "model": "script:" + script, "approval": "auto", "workspace": "sub", "wait_seconds": 60})
	if s["status"] != "completed" || s["workspace"] != filepath.Join(e.dir, "sub") {
		t.Fatalf("%v", s)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "sub", "sub", "a.txt")); err != nil {
		t.Error(err)
	}
}
