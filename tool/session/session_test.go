package session_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	memstore "github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/session"
)

type harness struct {
	t      *testing.T
	store  *memstore.Store
	runner *loop.Runner
	model  *scripted.Model
}

// newHarness runs the scripted model with every session tool plus a plain
// tool ("note") that records its calls, on the real runner and the
// in-memory store.
func newHarness(t *testing.T, m *scripted.Model, noted *[]string) *harness {
	t.Helper()
	note := tool.Func(model.ToolSpec{Name: "note", Description: "test", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"additionalProperties":false}`)},
		func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			*noted = append(*noted, string(args))
			return tool.Result{Output: "noted"}, nil
		})
	reg, err := tool.NewRegistry(append(session.Tools(), note)...)
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	r, err := loop.New(loop.Config{Model: m, ModelName: "test-model", Tools: reg, Log: st})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, store: st, runner: r, model: m}
}

func (h *harness) run() *loop.State {
	h.t.Helper()
	st, err := h.runner.Run(h.t.Context(), loop.Task{Prompt: "task"})
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func (h *harness) fold(id string) *loop.State {
	h.t.Helper()
	evs, err := h.store.Load(h.t.Context(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			h.t.Fatal(err)
		}
		if err := json.Unmarshal(b, &evs[i]); err != nil {
			h.t.Fatal(err)
		}
	}
	st, err := loop.Fold(evs)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func toolResults(req *model.Request) []model.Message {
	var out []model.Message
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func TestTools(t *testing.T) {
	tools := session.Tools()
	var names []string
	for _, tl := range tools {
		spec := tl.Spec()
		names = append(names, spec.Name)
		if spec.Description == "" {
			t.Errorf("%s has no description", spec.Name)
		}
		var s struct {
			Type                 string `json:"type"`
			AdditionalProperties *bool  `json:"additionalProperties"`
		}
		if err := json.Unmarshal(spec.Parameters, &s); err != nil || s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: schema must be an object with additionalProperties:false: %s", spec.Name, spec.Parameters)
		}
		if _, ok := tl.(loop.SessionTool); !ok {
			t.Errorf("%s is not a loop.SessionTool", spec.Name)
		}
		if tool.EffectOf(tl) != tool.EffectRead || !tool.IsIdempotent(tl) {
			t.Errorf("%s: effect %s idempotent %v, want read, true", spec.Name, tool.EffectOf(tl), tool.IsIdempotent(tl))
		}
	}
	want := []string{"update_plan", "remember", "recall", "forget", "list_memory", "ask_user", "final_answer"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names = %v, want %v", names, want)
	}
	if _, err := tool.NewRegistry(tools...); err != nil {
		t.Errorf("the session tools do not register: %v", err)
	}
}

func TestAskUser(t *testing.T) {
	var noted []string
	m := scripted.Replies(
		scripted.Calls(
			scripted.Call("note", `{"text":"before"}`),
			scripted.Call("ask_user", `{"question":"  Which database should I use?  "}`),
			scripted.Call("note", `{"text":"after"}`),
		),
		scripted.Text("Using PostgreSQL."),
	)
	h := newHarness(t, m, &noted)
	st := h.run()
	if st.Status != loop.StatusWaiting || st.Reason != loop.ReasonQuestion || st.Question != "Which database should I use?" {
		t.Fatalf("status %s reason %s question %q, want waiting with the question", st.Status, st.Reason, st.Question)
	}
	if back := h.fold(st.ID); back.Status != loop.StatusWaiting || back.Question != st.Question {
		t.Errorf("folded: status %s question %q", back.Status, back.Question)
	}
	if !reflect.DeepEqual(noted, []string{`{"text":"before"}`}) {
		t.Errorf("note ran with %v; the call after ask_user must not run", noted)
	}

	s, err := h.runner.Reply(t.Context(), st.ID, "PostgreSQL, please")
	if err != nil {
		t.Fatal(err)
	}
	st, err = s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusCompleted || st.Answer != "Using PostgreSQL." {
		t.Errorf("status %s answer %q", st.Status, st.Answer)
	}
	reqs := m.Requests()
	msgs := reqs[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != model.RoleUser || last.Content != "PostgreSQL, please" {
		t.Errorf("the request after the reply ends with %s %q, want the user's answer", last.Role, last.Content)
	}
	res := toolResults(reqs[1])
	if len(res) != 3 {
		t.Fatalf("%d tool results, want 3 (every call of the reply answered)", len(res))
	}
	if res[1].Content != "Your question was sent to the user. The session waits; their answer will follow as the next user message." || res[1].IsError {
		t.Errorf("ask_user result = %q (error %v)", res[1].Content, res[1].IsError)
	}
	if !strings.HasPrefix(res[2].Content, "not run:") || !res[2].IsError {
		t.Errorf("the call after ask_user = %q, want not run", res[2].Content)
	}
}

func TestFinalAnswer(t *testing.T) {
	var noted []string
	m := scripted.Replies(
		scripted.Calls(
			scripted.Call("note", `{"text":"before"}`),
			scripted.Call("final_answer", `{"answer":"All 12 tests pass."}`),
			scripted.Call("note", `{"text":"after"}`),
			scripted.Call("final_answer", `{"answer":"second answer"}`),
		),
	)
	h := newHarness(t, m, &noted)
	st := h.run()
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusCompleted || st.Reason != loop.ReasonCompleted || st.Answer != "All 12 tests pass." || st.Partial {
		t.Fatalf("status %s reason %s answer %q partial %v", st.Status, st.Reason, st.Answer, st.Partial)
	}
	back := h.fold(st.ID)
	if back.Status != loop.StatusCompleted || back.Answer != "All 12 tests pass." {
		t.Errorf("folded: status %s answer %q", back.Status, back.Answer)
	}
	if !reflect.DeepEqual(noted, []string{`{"text":"before"}`}) {
		t.Errorf("note ran with %v; calls after final_answer must not run", noted)
	}
	calls := back.Iterations[len(back.Iterations)-1].ToolCalls
	if len(calls) != 4 {
		t.Fatalf("%d tool call records, want 4", len(calls))
	}
	if calls[1].Output != "Final answer recorded; the session ends." || calls[1].Status != loop.ToolSuccess {
		t.Errorf("final_answer result = %q (%s)", calls[1].Output, calls[1].Status)
	}
	for _, c := range calls[2:] {
		if c.Status != loop.ToolError || c.Output != "not run: the session ended with a final answer" {
			t.Errorf("%s after final_answer: %s %q, want refused", c.Name, c.Status, c.Output)
		}
	}
	if len(back.Warnings) != 0 {
		t.Errorf("warnings %v, want none without a plan", back.Warnings)
	}
}

// final_answer with plan steps still open ends the session anyway, with a
// warning a watcher can see.
func TestFinalAnswerWithOpenPlan(t *testing.T) {
	var noted []string
	m := scripted.Replies(
		scripted.Calls(
			scripted.Call("update_plan", `{"action":"create","goal":"G","steps":["a","b","c"]}`),
			scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"completed"}`),
			scripted.Call("final_answer", `{"answer":"partly done"}`),
		),
	)
	h := newHarness(t, m, &noted)
	st := h.run()
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	back := h.fold(st.ID)
	if back.Status != loop.StatusCompleted || back.Answer != "partly done" {
		t.Fatalf("status %s answer %q", back.Status, back.Answer)
	}
	want := []loop.Warning{{Code: "final_answer_with_open_plan", Message: "the model gave its final answer while plan steps 2, 3 were not finished"}}
	if !reflect.DeepEqual(back.Warnings, want) {
		t.Errorf("warnings = %+v, want %+v", back.Warnings, want)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct{ call, args, want string }{
		{"ask_user", `{"question":"   "}`, "error: ask_user: question is empty; write the question for the user"},
		{"final_answer", `{"answer":""}`, "error: final_answer: answer is empty; write the answer for the user"},
	}
	for _, tc := range tests {
		t.Run(tc.call, func(t *testing.T) {
			var noted []string
			m := scripted.Replies(scripted.Call(tc.call, tc.args), scripted.Text("ok"))
			h := newHarness(t, m, &noted)
			st := h.run()
			if err := m.Err(); err != nil {
				t.Fatal(err)
			}
			if st.Status != loop.StatusCompleted || st.Answer != "ok" {
				t.Errorf("status %s answer %q: a refused call must not stop the session", st.Status, st.Answer)
			}
			res := toolResults(m.Requests()[1])
			if res[0].Content != tc.want || !res[0].IsError {
				t.Errorf("result = %q (error %v), want %q", res[0].Content, res[0].IsError, tc.want)
			}
		})
	}
}
