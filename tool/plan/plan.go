// Package plan is the update_plan session tool: the model writes down a goal
// and a few steps, marks each step as it works, and completes or fails the
// plan. Every change is a plan.updated event in the session log, so the
// plan is part of the state fold like everything else; Context renders it
// compactly for the model's next request.
//
// While a plan has pending steps, the runner does not take a prose reply
// as the final answer: it asks the model to continue (seed 003).
package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// Name is the tool's name.
const Name = "update_plan"

// MaxSteps is the most steps a plan may have.
const MaxSteps = 10

// Plan statuses, as recorded in plan.updated events.
const (
	StatusPlanning       = loop.PlanPlanning
	StatusExecuting      = loop.PlanExecuting
	StatusWaitingForUser = loop.PlanWaitingForUser
	StatusCompleted      = loop.PlanCompleted
	StatusFailed         = loop.PlanFailed
)

// Step statuses.
const (
	StepPending    = loop.StepPending
	StepInProgress = loop.StepInProgress
	StepCompleted  = loop.StepCompleted
	StepFailed     = loop.StepFailed
	StepSkipped    = loop.StepSkipped
)

// settable are the statuses update_step accepts, in the order error
// messages list them.
var settable = []string{string(StepInProgress), string(StepCompleted), string(StepFailed), string(StepSkipped)}

const description = `Keep an explicit plan for a multi-step task and report progress on it.
Actions:
- create: start a plan with a goal and 1-10 short steps (strings). Do this first on any task that needs several steps.
- update_step: set step N (1-based) to in_progress when you start it, then completed, failed or skipped when it is done; add a short result.
- complete: finish the plan once every step is completed, skipped or failed.
- fail: give up on the plan, with the reason.
- wait_for_user: stop and ask the user something (reason is the question); their answer comes back as the next user message.
While steps are pending, keep working on them rather than stopping: a reply without a tool call does not end the task until the plan is finished.`

var schema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["create", "update_step", "complete", "fail", "wait_for_user"], "description": "What to do with the plan."},
    "goal": {"type": "string", "description": "create: what the plan achieves, in one sentence."},
    "steps": {"type": "array", "items": {"type": "string"}, "description": "create: 1 to 10 steps, each a short description, in order."},
    "step": {"type": "integer", "description": "update_step: the 1-based number of the step."},
    "status": {"type": "string", "description": "update_step: one of in_progress, completed, failed, skipped."},
    "result": {"type": "string", "description": "update_step: optional short result of the step."},
    "reason": {"type": "string", "description": "fail: why the plan cannot be carried out (required). wait_for_user: the question for the user (required). complete: optional summary."}
  },
  "required": ["action"],
  "additionalProperties": false
}`)

// Tool is the update_plan tool. It implements loop.SessionTool.
type Tool struct{}

var _ loop.SessionTool = (*Tool)(nil)

// New returns the update_plan tool.
func New() *Tool { return &Tool{} }

// Spec describes update_plan to the model.
func (*Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: Name, Description: description, Parameters: schema}
}

// Effect is read: the tool changes only the session's own state.
func (*Tool) Effect() tool.Effect { return tool.EffectRead }

// Idempotent is true: the tool's only effects are the events it returns,
// which are recorded with its result, so a call a crash interrupted had
// no effect and is safe to run again.
func (*Tool) Idempotent() bool { return true }

// Call refuses to run outside a session: the plan lives in the session log.
func (*Tool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, errors.New(Name + " works on a session's plan and runs only inside the agentloop runner")
}

type args struct {
	Action string   `json:"action"`
	Goal   string   `json:"goal"`
	Steps  []string `json:"steps"`
	Step   *int     `json:"step"`
	Status string   `json:"status"`
	Result string   `json:"result"`
	Reason string   `json:"reason"`
}

// CallSession applies one action to the session's plan. A call that cannot
// be applied returns an error whose text tells the model what to fix.
func (*Tool) CallSession(_ context.Context, st *loop.State, raw json.RawMessage) (tool.Result, []loop.Payload, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Result{}, nil, fmt.Errorf("%s: arguments do not match the schema (%v); send an object with action and the fields it needs", Name, err)
	}
	var cur *loop.Plan
	if st != nil {
		cur = st.Plan
	}
	switch a.Action {
	case "create":
		return create(cur, a)
	case "update_step":
		return updateStep(cur, a)
	case "complete":
		return complete(cur, a)
	case "fail":
		return fail(cur, a)
	case "wait_for_user":
		return waitForUser(cur, a)
	case "":
		return tool.Result{}, nil, errors.New("action is required: one of create, update_step, complete, fail, wait_for_user")
	default:
		return tool.Result{}, nil, fmt.Errorf("action %q is not one of create, update_step, complete, fail, wait_for_user", a.Action)
	}
}

func create(cur *loop.Plan, a args) (tool.Result, []loop.Payload, error) {
	if cur != nil && cur.Status.Open() {
		return fail1("create: a plan already exists; use update_step, or complete/fail it first")
	}
	goal := strings.TrimSpace(a.Goal)
	if goal == "" {
		return fail1("create: goal is required: say in one sentence what the plan achieves")
	}
	if len(a.Steps) == 0 {
		return fail1("create: steps is required: give 1 to %d steps, each a short string", MaxSteps)
	}
	if len(a.Steps) > MaxSteps {
		return fail1("create: %d steps given; a plan has at most %d steps, so merge or drop some", len(a.Steps), MaxSteps)
	}
	p := &loop.PlanUpdated{Goal: goal, Status: StatusPlanning, Steps: make([]loop.PlanStep, len(a.Steps)), Current: 1}
	for i, s := range a.Steps {
		s = strings.TrimSpace(s)
		if s == "" {
			return fail1("create: step %d is empty; every step needs a short description", i+1)
		}
		p.Steps[i] = loop.PlanStep{Title: s, Status: StepPending}
	}
	return changed(p, fmt.Sprintf("Plan created with %d steps. Mark step 1 in_progress with update_step when you start it.", len(p.Steps)))
}

func updateStep(cur *loop.Plan, a args) (tool.Result, []loop.Payload, error) {
	if cur == nil {
		return fail1("update_step: there is no plan; create one first with action create")
	}
	if !cur.Status.Open() {
		return fail1("update_step: the plan is %s; create a new plan to track more work", cur.Status)
	}
	if a.Step == nil {
		return fail1("update_step: step is required: the 1-based number of the step (1 to %d)", len(cur.Steps))
	}
	n := *a.Step
	if n < 1 || n > len(cur.Steps) {
		return fail1("update_step: step %d does not exist; the plan has %d steps", n, len(cur.Steps))
	}
	if a.Status == "" {
		return fail1("update_step: status is required: one of %s", strings.Join(settable, ", "))
	}
	if !isSettable(a.Status) {
		return fail1("update_step: status %q is not one of %s", a.Status, strings.Join(settable, ", "))
	}
	p := next(cur)
	p.Status = StatusExecuting
	s := &p.Steps[n-1]
	if s.Status != StepCompleted && a.Status == string(StepCompleted) {
		s.CompletedAt = time.Now().UTC()
	}
	s.Status = loop.StepStatus(a.Status)
	if r := strings.TrimSpace(a.Result); r != "" {
		s.Result = r
	}
	p.Current = loop.CurrentStep(p.Steps)
	return changed(p, fmt.Sprintf("Step %d is %s.", n, a.Status))
}

func complete(cur *loop.Plan, a args) (tool.Result, []loop.Payload, error) {
	if cur == nil {
		return fail1("complete: there is no plan to complete")
	}
	if !cur.Status.Open() {
		return fail1("complete: the plan is already %s", cur.Status)
	}
	var open []string
	for i, s := range cur.Steps {
		if !done(s.Status) {
			open = append(open, fmt.Sprintf("%d (%s)", i+1, stepStatus(s)))
		}
	}
	if len(open) > 0 {
		return fail1("complete: %s still pending: %s; mark each completed, skipped or failed with update_step first, or fail the plan",
			plural(len(open), "step is", "steps are"), strings.Join(open, ", "))
	}
	p := next(cur)
	p.Status = StatusCompleted
	p.Reason = strings.TrimSpace(a.Reason)
	return changed(p, "Plan completed. Give your final answer now.")
}

func fail(cur *loop.Plan, a args) (tool.Result, []loop.Payload, error) {
	if cur == nil {
		return fail1("fail: there is no plan to fail")
	}
	if !cur.Status.Open() {
		return fail1("fail: the plan is already %s", cur.Status)
	}
	reason := strings.TrimSpace(a.Reason)
	if reason == "" {
		return fail1("fail: reason is required: say why the plan cannot be carried out")
	}
	p := next(cur)
	p.Status = StatusFailed
	p.Reason = reason
	return changed(p, "Plan failed: "+reason+". Tell the user what was done and what stopped you.")
}

func waitForUser(cur *loop.Plan, a args) (tool.Result, []loop.Payload, error) {
	q := strings.TrimSpace(a.Reason)
	if q == "" {
		return fail1("wait_for_user: reason is required: write the question or request for the user")
	}
	var effects []loop.Payload
	if cur != nil && cur.Status.Open() {
		// The plan waits with the session; the answer sets it executing.
		p := next(cur)
		p.Status = StatusWaitingForUser
		effects = append(effects, p)
	}
	return tool.Result{Output: "Your question was sent to the user. The session waits; their answer will follow as the next user message."},
		append(effects, &loop.SessionWaiting{Reason: loop.ReasonQuestion, Question: q}), nil
}

// next copies the current plan into a new event, so the state's steps are
// never changed in place.
func next(cur *loop.Plan) *loop.PlanUpdated {
	return &loop.PlanUpdated{Goal: cur.Goal, Status: cur.Status, Steps: append([]loop.PlanStep(nil), cur.Steps...), Current: loop.CurrentStep(cur.Steps)}
}

func changed(p *loop.PlanUpdated, head string) (tool.Result, []loop.Payload, error) {
	out := head + "\n" + Render(&loop.Plan{Goal: p.Goal, Status: p.Status, Steps: p.Steps})
	return tool.Result{Output: out}, []loop.Payload{p}, nil
}

func fail1(format string, a ...any) (tool.Result, []loop.Payload, error) {
	return tool.Result{}, nil, fmt.Errorf(format, a...)
}

func isSettable(s string) bool {
	for _, v := range settable {
		if s == v {
			return true
		}
	}
	return false
}

// done reports whether a step needs no more work.
func done(status loop.StepStatus) bool { return status.Done() }

func stepStatus(s loop.PlanStep) loop.StepStatus {
	if s.Status == "" {
		return StepPending
	}
	return s.Status
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
