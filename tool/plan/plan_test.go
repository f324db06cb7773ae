package plan_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	memstore "github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/plan"
)

// harness runs sessions with the real runner, the scripted model, the
// in-memory store and the plan tool plus final_answer-like test tools.
type harness struct {
	t      *testing.T
	store  *memstore.Store
	runner *loop.Runner
	model  *scripted.Model
}

func newHarness(t *testing.T, m *scripted.Model, limits loop.Limits) *harness {
	t.Helper()
	reg, err := tool.NewRegistry(plan.New(), finish{})
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	r, err := loop.New(loop.Config{Model: m, ModelName: "test-model", Tools: reg, Log: st, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, store: st, runner: r, model: m}
}

func (h *harness) run(task string) *loop.State {
	h.t.Helper()
	st, err := h.runner.Run(h.t.Context(), loop.Task{Prompt: task})
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	return st
}

// fold rebuilds the state from the stored log, each event round-tripped
// through its JSON encoding as a durable store would keep it.
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
		var back loop.Event
		if err := json.Unmarshal(b, &back); err != nil {
			h.t.Fatal(err)
		}
		evs[i] = back
	}
	st, err := loop.Fold(evs)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func (h *harness) events(id string, typ loop.EventType) []loop.Event {
	h.t.Helper()
	evs, err := h.store.Load(h.t.Context(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []loop.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) checkScript() {
	h.t.Helper()
	if err := h.model.Err(); err != nil {
		h.t.Fatalf("script: %v", err)
	}
}

// finish is a minimal session tool that ends the session, so a test can
// stop a session whose plan still has pending steps.
type finish struct{}

func (finish) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "finish", Description: "end", Parameters: json.RawMessage(`{"type":"object","additionalProperties":false}`)}
}
func (finish) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}
func (finish) CallSession(context.Context, *loop.State, json.RawMessage) (tool.Result, []loop.Payload, error) {
	return tool.Result{Output: "ok"}, []loop.Payload{&loop.Finish{Answer: "finished"}}, nil
}

func toolOutputs(req *model.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

func TestSpec(t *testing.T) {
	p := plan.New()
	spec := p.Spec()
	if spec.Name != "update_plan" || spec.Description == "" {
		t.Fatalf("spec = %+v", spec)
	}
	var s struct {
		AdditionalProperties *bool `json:"additionalProperties"`
	}
	if err := json.Unmarshal(spec.Parameters, &s); err != nil || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("schema must set additionalProperties:false: %s", spec.Parameters)
	}
	if tool.EffectOf(p) != tool.EffectRead || !tool.IsIdempotent(p) {
		t.Errorf("effect %s idempotent %v, want read true", tool.EffectOf(p), tool.IsIdempotent(p))
	}
	if _, err := p.Call(t.Context(), json.RawMessage(`{"action":"complete"}`)); err == nil {
		t.Error("Call outside a session should fail")
	}
}

func TestLifecycle(t *testing.T) {
	m := scripted.Replies(
		scripted.Call("update_plan", `{"action":"create","goal":"Ship the fix","steps":["Find the bug","Fix it","Run the tests"]}`),
		scripted.Calls(
			scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"in_progress"}`),
			scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"completed","result":"off-by-one in retry.go"}`),
		),
		scripted.Call("update_plan", `{"action":"update_step","step":2,"status":"completed"}`),
		scripted.Call("update_plan", `{"action":"update_step","step":3,"status":"skipped","result":"no test runner"}`),
		scripted.Call("update_plan", `{"action":"complete","reason":"fixed"}`),
		scripted.Text("The bug is fixed."),
	)
	h := newHarness(t, m, loop.Limits{})
	st := h.run("fix the bug")
	h.checkScript()
	if st.Status != loop.StatusCompleted || st.Answer != "The bug is fixed." {
		t.Fatalf("status %s answer %q, want completed with the text reply", st.Status, st.Answer)
	}
	want := &loop.Plan{Goal: "Ship the fix", Status: "completed", Steps: []loop.PlanStep{
		{Title: "Find the bug", Status: "completed", Result: "off-by-one in retry.go"},
		{Title: "Fix it", Status: "completed"},
		{Title: "Run the tests", Status: "skipped", Result: "no test runner"},
	}, Reason: "fixed"}
	back := h.fold(st.ID)
	for _, p := range []*loop.Plan{back.Plan, st.Plan} {
		// Completed steps say when; the rest is compared whole.
		for i := range p.Steps {
			if done := p.Steps[i].Status == loop.StepCompleted; done == p.Steps[i].CompletedAt.IsZero() {
				t.Errorf("step %d (%s) completed at %v", i+1, p.Steps[i].Status, p.Steps[i].CompletedAt)
			}
			p.Steps[i].CompletedAt = time.Time{}
		}
	}
	if !reflect.DeepEqual(back.Plan, want) {
		t.Errorf("plan after folding the stored log:\n got %+v\nwant %+v", back.Plan, want)
	}
	if !reflect.DeepEqual(st.Plan, want) {
		t.Errorf("runner's plan:\n got %+v\nwant %+v", st.Plan, want)
	}
	if n := len(h.events(st.ID, loop.TypePlanUpdated)); n != 6 {
		t.Errorf("%d plan.updated events, want 6 (one per change)", n)
	}
	if evs := h.events(st.ID, loop.TypePlanUpdated); evs[len(evs)-1].Data.(*loop.PlanUpdated).Reason != "fixed" {
		t.Errorf("complete's reason not recorded: %+v", evs[len(evs)-1].Data)
	}

	// What the model saw after each call: the plan after the change.
	reqs := m.Requests()
	outs := toolOutputs(reqs[1])
	wantCreate := "Plan created with 3 steps. Mark step 1 in_progress with update_step when you start it.\n" +
		"Plan (planning, 0 of 3 steps finished): Ship the fix.\n1. [pending] Find the bug\n2. [pending] Fix it\n3. [pending] Run the tests"
	if outs[0] != wantCreate {
		t.Errorf("create output:\n%s\nwant\n%s", outs[0], wantCreate)
	}
	outs = toolOutputs(reqs[2])
	if got := outs[len(outs)-1]; !strings.HasPrefix(got, "Step 1 is completed.\nPlan (executing, 1 of 3 steps finished)") ||
		!strings.Contains(got, "1. [completed] Find the bug (off-by-one in retry.go)") {
		t.Errorf("update_step output:\n%s", got)
	}
	outs = toolOutputs(reqs[5])
	if got := outs[len(outs)-1]; !strings.HasPrefix(got, "Plan completed. Give your final answer now.\nPlan (completed, 3 of 3 steps finished)") {
		t.Errorf("complete output:\n%s", got)
	}
}

func TestCreateAfterFinishedPlan(t *testing.T) {
	m := scripted.Replies(
		scripted.Calls(
			scripted.Call("update_plan", `{"action":"create","goal":"First","steps":["a"]}`),
			scripted.Call("update_plan", `{"action":"fail","reason":"wrong approach"}`),
			scripted.Call("update_plan", `{"action":"create","goal":"Second","steps":["b","c"]}`),
		),
		scripted.Call("finish", `{}`),
	)
	h := newHarness(t, m, loop.Limits{})
	st := h.run("task")
	h.checkScript()
	for _, out := range toolOutputs(m.Requests()[1]) {
		if strings.HasPrefix(out, "error:") {
			t.Errorf("unexpected error result: %s", out)
		}
	}
	if p := h.fold(st.ID).Plan; p.Goal != "Second" || p.Status != "planning" || len(p.Steps) != 2 || p.Current != 1 {
		t.Errorf("plan = %+v, want the second plan, planning at step 1", p)
	}
	evs := h.events(st.ID, loop.TypePlanUpdated)
	if f := evs[1].Data.(*loop.PlanUpdated); f.Status != "failed" || f.Reason != "wrong approach" {
		t.Errorf("fail event = %+v", f)
	}
}

// TestErrors runs each bad call after some setup calls in the same reply
// and checks the exact error result the model gets (the runner prefixes
// "error: " to a session tool's error).
func TestErrors(t *testing.T) {
	const (
		create4 = `{"action":"create","goal":"G","steps":["a","b","c","d"]}`
	)
	elevenSteps := `{"action":"create","goal":"G","steps":["1","2","3","4","5","6","7","8","9","10","11"]}`
	tests := []struct {
		name  string
		setup []string
		call  string
		want  string
	}{
		{"create twice", []string{create4}, create4,
			"create: a plan already exists; use update_step, or complete/fail it first"},
		{"create without goal", nil, `{"action":"create","steps":["a"]}`,
			"create: goal is required: say in one sentence what the plan achieves"},
		{"create with blank goal", nil, `{"action":"create","goal":"  ","steps":["a"]}`,
			"create: goal is required: say in one sentence what the plan achieves"},
		{"create without steps", nil, `{"action":"create","goal":"G"}`,
			"create: steps is required: give 1 to 10 steps, each a short string"},
		{"create with no steps", nil, `{"action":"create","goal":"G","steps":[]}`,
			"create: steps is required: give 1 to 10 steps, each a short string"},
		{"create with 11 steps", nil, elevenSteps,
			"create: 11 steps given; a plan has at most 10 steps, so merge or drop some"},
		{"create with an empty step", nil, `{"action":"create","goal":"G","steps":["a"," "]}`,
			"create: step 2 is empty; every step needs a short description"},
		{"update_step without plan", nil, `{"action":"update_step","step":1,"status":"completed"}`,
			"update_step: there is no plan; create one first with action create"},
		{"update_step without step", []string{create4}, `{"action":"update_step","status":"completed"}`,
			"update_step: step is required: the 1-based number of the step (1 to 4)"},
		{"update_step past the end", []string{create4}, `{"action":"update_step","step":7,"status":"completed"}`,
			"update_step: step 7 does not exist; the plan has 4 steps"},
		{"update_step zero", []string{create4}, `{"action":"update_step","step":0,"status":"completed"}`,
			"update_step: step 0 does not exist; the plan has 4 steps"},
		{"update_step without status", []string{create4}, `{"action":"update_step","step":1}`,
			"update_step: status is required: one of in_progress, completed, failed, skipped"},
		{"update_step bad status", []string{create4}, `{"action":"update_step","step":1,"status":"done"}`,
			`update_step: status "done" is not one of in_progress, completed, failed, skipped`},
		{"update_step back to pending", []string{create4}, `{"action":"update_step","step":1,"status":"pending"}`,
			`update_step: status "pending" is not one of in_progress, completed, failed, skipped`},
		{"update_step on completed plan",
			[]string{`{"action":"create","goal":"G","steps":["a"]}`, `{"action":"update_step","step":1,"status":"completed"}`, `{"action":"complete"}`},
			`{"action":"update_step","step":1,"status":"failed"}`,
			"update_step: the plan is completed; create a new plan to track more work"},
		{"complete without plan", nil, `{"action":"complete"}`,
			"complete: there is no plan to complete"},
		{"complete with pending steps",
			[]string{create4, `{"action":"update_step","step":1,"status":"completed"}`, `{"action":"update_step","step":2,"status":"in_progress"}`, `{"action":"update_step","step":4,"status":"failed"}`},
			`{"action":"complete"}`,
			"complete: 2 steps are still pending: 2 (in_progress), 3 (pending); mark each completed, skipped or failed with update_step first, or fail the plan"},
		{"complete with one pending step",
			[]string{`{"action":"create","goal":"G","steps":["a","b"]}`, `{"action":"update_step","step":1,"status":"skipped"}`},
			`{"action":"complete"}`,
			"complete: 1 step is still pending: 2 (pending); mark each completed, skipped or failed with update_step first, or fail the plan"},
		{"complete twice",
			[]string{`{"action":"create","goal":"G","steps":["a"]}`, `{"action":"update_step","step":1,"status":"completed"}`, `{"action":"complete"}`},
			`{"action":"complete"}`,
			"complete: the plan is already completed"},
		{"fail without plan", nil, `{"action":"fail","reason":"x"}`,
			"fail: there is no plan to fail"},
		{"fail without reason", []string{create4}, `{"action":"fail"}`,
			"fail: reason is required: say why the plan cannot be carried out"},
		{"fail a failed plan", []string{create4, `{"action":"fail","reason":"x"}`}, `{"action":"fail","reason":"y"}`,
			"fail: the plan is already failed"},
		{"wait_for_user without reason", []string{create4}, `{"action":"wait_for_user"}`,
			"wait_for_user: reason is required: write the question or request for the user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls []scripted.Step
			for _, s := range tc.setup {
				calls = append(calls, scripted.Call("update_plan", s))
			}
			calls = append(calls, scripted.Call("update_plan", tc.call))
			m := scripted.Replies(scripted.Calls(calls...), scripted.Call("finish", `{}`))
			h := newHarness(t, m, loop.Limits{})
			st := h.run("task")
			h.checkScript()
			reqs := m.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			outs := toolOutputs(reqs[1])
			for i, out := range outs[:len(outs)-1] {
				if strings.HasPrefix(out, "error") {
					t.Fatalf("setup call %d failed: %s", i+1, out)
				}
			}
			if got := outs[len(outs)-1]; got != "error: "+tc.want {
				t.Errorf("result:\n got %q\nwant %q", got, "error: "+tc.want)
			}
			// A refused change records no event.
			if n := len(h.events(st.ID, loop.TypePlanUpdated)); n != len(tc.setup) {
				t.Errorf("%d plan.updated events, want %d (setup only)", n, len(tc.setup))
			}
		})
	}
}

// Arguments the schema rejects never reach the tool; the registry's
// message goes back to the model.
func TestSchemaErrors(t *testing.T) {
	for _, args := range []string{
		`{"action":"delete"}`,
		`{"action":"update_step","step":"two","status":"completed"}`,
		`{"action":"create","goal":"G","steps":["a"],"priority":1}`,
		`{"goal":"G"}`,
	} {
		t.Run(args, func(t *testing.T) {
			m := scripted.Replies(scripted.Call("update_plan", args), scripted.Call("finish", `{}`))
			h := newHarness(t, m, loop.Limits{})
			h.run("task")
			h.checkScript()
			out := toolOutputs(m.Requests()[1])[0]
			if !strings.Contains(out, "invalid tool arguments") || !strings.Contains(out, `"update_plan"`) {
				t.Errorf("result = %q, want the registry's validation error", out)
			}
		})
	}
}

// Seed 003: while the plan has pending steps, a prose reply is not the end;
// the runner asks the model to continue, at most 3 times in a row, and
// records a warning each time. The 4th prose reply in a row is the answer.
func TestContinuationWhilePlanPending(t *testing.T) {
	m := scripted.Replies(
		scripted.Call("update_plan", `{"action":"create","goal":"G","steps":["a","b"]}`),
		scripted.Text("I will now do step a."),
		scripted.Text("Working on it."),
		scripted.Text("Still thinking."),
		scripted.Text("Here is my answer."),
		scripted.Text("prose 5"),
		scripted.Text("prose 6"),
	)
	h := newHarness(t, m, loop.Limits{MaxIterations: 20})
	st := h.run("task")
	var warnings int
	for _, w := range h.fold(st.ID).Warnings {
		if w.Code == "prose_with_pending_plan" {
			warnings++
		}
	}
	if warnings != 3 {
		t.Errorf("%d prose_with_pending_plan warnings, want 3", warnings)
	}
	if st.Status != loop.StatusCompleted || st.Answer != "Here is my answer." {
		t.Errorf("status %s (%s) answer %q, want completed with the 4th prose reply", st.Status, st.Reason, st.Answer)
	}
	if m.Remaining() != 2 {
		t.Errorf("%d script steps left, want 2 (the runner must stop after the 4th prose reply)", m.Remaining())
	}
	reqs := m.Requests()
	for i := 2; i < len(reqs); i++ {
		last := reqs[i].Messages[len(reqs[i].Messages)-1]
		if last.Role != model.RoleUser || !strings.Contains(last.Content, "pending steps") {
			t.Errorf("request %d ends with %s %q, want the continuation message", i+1, last.Role, last.Content)
		}
	}
}

// A tool call resets the count: after a tool call the model again gets up
// to 3 continuations.
func TestContinuationCountResetsAfterToolCall(t *testing.T) {
	m := scripted.Replies(
		scripted.Call("update_plan", `{"action":"create","goal":"G","steps":["a","b"]}`),
		scripted.Text("p1"),
		scripted.Text("p2"),
		scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"completed"}`),
		scripted.Text("q1"),
		scripted.Text("q2"),
		scripted.Text("q3"),
		scripted.Text("final"),
		scripted.Text("too far"),
	)
	h := newHarness(t, m, loop.Limits{MaxIterations: 20})
	st := h.run("task")
	if st.Status != loop.StatusCompleted || st.Answer != "final" {
		t.Errorf("status %s (%s) answer %q, want completed with %q", st.Status, st.Reason, st.Answer, "final")
	}
}

// A plan whose steps are all finished does not hold the session open.
func TestNoContinuationWhenStepsFinished(t *testing.T) {
	m := scripted.Replies(
		scripted.Calls(
			scripted.Call("update_plan", `{"action":"create","goal":"G","steps":["a"]}`),
			scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"completed"}`),
		),
		scripted.Text("Done."),
	)
	h := newHarness(t, m, loop.Limits{})
	st := h.run("task")
	h.checkScript()
	if st.Status != loop.StatusCompleted || st.Answer != "Done." || len(st.Warnings) != 0 {
		t.Errorf("status %s answer %q warnings %v", st.Status, st.Answer, st.Warnings)
	}
}

func TestWaitForUser(t *testing.T) {
	m := scripted.Replies(
		scripted.Call("update_plan", `{"action":"create","goal":"Organise files","steps":["Ask how","Do it"]}`),
		scripted.Calls(
			scripted.Call("update_plan", `{"action":"wait_for_user","reason":"Sort by date or by type?"}`),
			scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"completed"}`),
		),
		scripted.Call("finish", `{}`),
	)
	h := newHarness(t, m, loop.Limits{})
	st := h.run("organise my files")
	if st.Status != loop.StatusWaiting || st.Reason != loop.ReasonQuestion || st.Question != "Sort by date or by type?" {
		t.Fatalf("status %s reason %s question %q, want waiting for the question", st.Status, st.Reason, st.Question)
	}
	if w := h.fold(st.ID); w.Status != loop.StatusWaiting || w.Question != "Sort by date or by type?" {
		t.Errorf("folded: status %s question %q", w.Status, w.Question)
	}
	s, err := h.runner.Reply(t.Context(), st.ID, "by type")
	if err != nil {
		t.Fatal(err)
	}
	st, err = s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h.checkScript()
	if st.Status != loop.StatusCompleted {
		t.Fatalf("status %s after the reply, want completed", st.Status)
	}
	reqs := m.Requests()
	last := reqs[2].Messages[len(reqs[2].Messages)-1]
	if last.Role != model.RoleUser || last.Content != "by type" {
		t.Errorf("the request after the reply ends with %s %q, want the user's answer", last.Role, last.Content)
	}
	outs := toolOutputs(reqs[2])
	if got := outs[len(outs)-2]; got != "Your question was sent to the user. The session waits; their answer will follow as the next user message." {
		t.Errorf("wait_for_user result = %q", got)
	}
	if got := outs[len(outs)-1]; !strings.HasPrefix(got, "not run:") {
		t.Errorf("the call after wait_for_user in the same reply = %q, want not run", got)
	}
	if p := h.fold(st.ID).Plan; p.Steps[0].Status != "pending" {
		t.Errorf("step 1 = %s, the refused update must not apply", p.Steps[0].Status)
	}
}

// wait_for_user without a plan still asks.
func TestWaitForUserWithoutPlan(t *testing.T) {
	m := scripted.Replies(scripted.Call("update_plan", `{"action":"wait_for_user","reason":"Which branch?"}`))
	h := newHarness(t, m, loop.Limits{})
	st := h.run("task")
	h.checkScript()
	if st.Status != loop.StatusWaiting || st.Question != "Which branch?" || st.Plan != nil {
		t.Errorf("status %s question %q plan %+v", st.Status, st.Question, st.Plan)
	}
}
