package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// The policy as a table: states built by folding events, decisions
// checked event by event. No runner, goroutine, clock or store.

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// fold builds the state of a session from payloads.
func fold(t *testing.T, ps ...Payload) *State {
	t.Helper()
	st := &State{Header: Header{Status: StatusIdle}}
	for i, p := range ps {
		if err := st.Apply(NewEvent("p", int64(i+1), t0.Add(time.Duration(i)*time.Second), p)); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func started(mode Mode, max int) *SessionStarted {
	return &SessionStarted{Task: "t", Mode: mode, Marker: DefaultMarker, Limits: Limits{MaxIterations: max}}
}

// inIteration is a session in iteration n with a text reply.
func inIteration(n int, text string) []Payload {
	return []Payload{&IterationStarted{N: n}, &ModelResponded{Iteration: n, Text: text}}
}

func seq(parts ...[]Payload) []Payload {
	var out []Payload
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// describe renders a step as "next: type{json} | type{json}".
func describe(s Step) string {
	var parts []string
	for _, p := range s.Events {
		b, _ := json.Marshal(p)
		parts = append(parts, string(p.EventType())+string(b))
	}
	names := map[next]string{nothing: "nothing", settleAnswer: "settle " + s.Answer, callModel: "call model", endForLimit: "end for " + string(s.Limit.Reason), lookForStuck: "look for stuck",
		runTool: "run " + string(s.Input), rerunTool: "run again " + string(s.Input)}
	return names[s.Next] + ": " + strings.Join(parts, " | ")
}

// want checks a step: its next effect and, in order, one substring per event.
func want(t *testing.T, name string, got Step, next string, events ...string) {
	t.Helper()
	d := describe(got)
	if !strings.HasPrefix(d, next+":") {
		t.Errorf("%s: next %q, want %q\n%s", name, strings.SplitN(d, ":", 2)[0], next, d)
		return
	}
	if len(got.Events) != len(events) {
		t.Errorf("%s: %d events, want %d\n%s", name, len(got.Events), len(events), d)
		return
	}
	for i, e := range got.Events {
		b, _ := json.Marshal(e)
		s := string(e.EventType()) + string(b)
		if !strings.Contains(s, events[i]) {
			t.Errorf("%s: event %d is %s, want it to contain %s", name, i+1, s, events[i])
		}
	}
}

func TestPolicyReply(t *testing.T) {
	p := policy{texts: Texts{}.withDefaults()}
	correction := &MessageAdded{Role: model.RoleUser, Content: "fix it", Kind: KindCorrection}
	plan := &PlanUpdated{Goal: "g", Status: "in_progress", Steps: []PlanStep{{Title: "a", Status: "completed"}, {Title: "b", Status: "pending"}}}
	cases := []struct {
		name   string
		st     []Payload
		text   string
		rec    Recovered
		gate   bool
		next   string
		events []string
	}{
		{"an answer is settled", seq([]Payload{started(ModeTools, 5)}, inIteration(1, "done")), "done", Recovered{}, false,
			"settle done", []string{`iteration.ended{"n":1,"status":"completed","answer":"done"}`}},
		{"an unreadable tool call gets one correction", seq([]Payload{started(ModeTools, 5)}, inIteration(1, "<tool")), "<tool", Recovered{Attempted: true, Problem: "bad json"}, false,
			"nothing", []string{`message.added{"role":"user"`}},
		{"a second one ends the session", seq([]Payload{started(ModeTools, 5)}, inIteration(1, "<tool"), []Payload{correction, &IterationEnded{N: 1, Status: IterationCompleted}}, inIteration(2, "<tool")),
			"<tool", Recovered{Attempted: true, Problem: "bad json"}, false,
			"nothing", []string{`warning{"code":"unrecovered_tool_call"`, `iteration.ended{"n":2,"status":"failed","error":"malformed tool call: bad json"`, `session.ended{"status":"failed","reason":"malformed_tool_call"`}},
		{"self-reasoning continues", seq([]Payload{started(ModeSelfReasoning, 3)}, inIteration(1, "hmm")), "hmm", Recovered{}, false,
			"nothing", []string{`"kind":"continue"`}},
		{"self-reasoning at its last iteration leaves it to the limit", seq([]Payload{started(ModeSelfReasoning, 1)}, inIteration(1, "hmm")), "hmm", Recovered{}, false,
			"nothing", nil},
		{"the marker ends self-reasoning", seq([]Payload{started(ModeSelfReasoning, 3)}, inIteration(1, "so TASK_COMPLETE: 42")), "so TASK_COMPLETE: 42", Recovered{}, false,
			"settle 42", []string{`"answer":"42"`}},
		{"prose with a pending plan continues", seq([]Payload{started(ModeTools, 5), plan}, inIteration(1, "working on it")), "working on it", Recovered{}, false,
			"nothing", []string{`warning{"code":"prose_with_pending_plan"`, `"kind":"continue"`}},
		{"with a gate the gate judges it", seq([]Payload{started(ModeTools, 5), plan}, inIteration(1, "step done")), "step done", Recovered{}, true,
			"settle step done", []string{`"answer":"step done"`}},
		{"an empty reply is asked again", seq([]Payload{started(ModeTools, 5)}, inIteration(1, "")), " ", Recovered{}, false,
			"nothing", []string{`warning{"code":"empty_reply"`, `"kind":"empty_reply"`}},
		{"admitting failure waits for a person", seq([]Payload{started(ModeTools, 5)}, inIteration(1, "I was unable to fix the bug.")), "I was unable to fix the bug.", Recovered{}, false,
			"nothing", []string{`iteration.ended{"n":1,"status":"completed"}`, `session.waiting{"reason":"model_gave_up"`}},
	}
	for _, c := range cases {
		p.hasGate = c.gate
		want(t, c.name, p.reply(fold(t, c.st...), c.text, c.rec), c.next, c.events...)
	}
	// A second empty reply in a row fails the session.
	st := fold(t, seq([]Payload{started(ModeTools, 5)}, inIteration(1, ""),
		[]Payload{&MessageAdded{Role: model.RoleUser, Content: "empty", Kind: KindEmptyReply}, &IterationEnded{N: 1, Status: IterationCompleted}}, inIteration(2, ""))...)
	want(t, "a second empty reply", p.reply(st, "", Recovered{}), "nothing", `iteration.ended{"n":2,"status":"failed","error":"empty reply"}`, `"reason":"empty_reply"`)
}

func TestPolicyTruncatedAndFailures(t *testing.T) {
	p := policy{texts: Texts{}.withDefaults()}
	st := fold(t, seq([]Payload{started(ModeTools, 5)}, inIteration(1, "par"))...)
	want(t, "cut text", p.truncated(st, "par", false), "nothing", `"kind":"truncated"`)
	want(t, "cut tool call", p.truncated(st, "", true), "nothing", `warning{"code":"truncated_tool_calls"`, `"kind":"truncated"`)
	last := fold(t, seq([]Payload{started(ModeTools, 1)}, inIteration(1, "par"))...)
	want(t, "cut at the last iteration", p.truncated(last, "par", false), "nothing", `iteration.ended{"n":1,"status":"failed"`, `"reason":"truncated"`)

	open := fold(t, started(ModeTools, 5), &IterationStarted{N: 1})
	faulted := fold(t, started(ModeTools, 5), &IterationStarted{N: 1},
		&ModelFailed{Iteration: 1, Timeout: true}, &ModelFailed{Iteration: 1, Timeout: true})
	cases := []struct {
		name   string
		st     *State
		f      modelFault
		events []string
	}{
		{"a timeout is tried once more", open, modelFault{Err: "slow", Timeout: true}, []string{`warning{"code":"model_call_retry"`}},
		{"twice pauses", faulted, modelFault{Err: "slow", Timeout: true}, []string{`session.paused{"reason":"model_timeout"`}},
		{"an unreadable reply twice pauses", faulted, modelFault{Err: "garbage", Malformed: true}, []string{`session.paused{"reason":"model_error"`}},
		{"retries ran out", open, modelFault{Err: "503", Retryable: true}, []string{`session.paused{"reason":"model_error","detail":"the model kept failing: 503`}},
		{"the session's time ran out", open, modelFault{Err: "session timed out", Timeout: true, SessionTimeout: true}, []string{`iteration.ended{"n":1,"status":"failed","error":"session timed out"}`}},
		{"anything else ends it", open, modelFault{Err: "401"}, []string{`iteration.ended{"n":1,"status":"failed","error":"401"}`, `session.ended{"status":"error","reason":"error","detail":"401"`}},
	}
	for _, c := range cases {
		want(t, c.name, p.modelFailed(c.st, c.f), "nothing", c.events...)
	}
}

func TestPolicyIterationsAndStuck(t *testing.T) {
	p := policy{texts: Texts{}.withDefaults()}
	call := func(n int, out string, isErr bool) []Payload {
		id := fmt.Sprintf("c%d", n)
		return []Payload{&IterationStarted{N: n},
			&ModelResponded{Iteration: n, ToolCalls: []model.ToolCall{{ID: id, Name: "read", Arguments: json.RawMessage(`{"path":"x"}`)}}},
			&ToolStarted{Iteration: n, CallID: id, Name: "read", Input: json.RawMessage(`{"path":"x"}`)},
			&ToolFinished{Iteration: n, CallID: id, Name: "read", Output: out, IsError: isErr}}
	}
	closed := func(n int) []Payload { return []Payload{&IterationEnded{N: n, Status: IterationCompleted}} }
	want(t, "a tool call", p.iterationDone(fold(t, seq([]Payload{started(ModeTools, 9)}, call(1, "a", false))...)), "look for stuck", `iteration.ended{"n":1,"status":"completed"}`)
	want(t, "every call failed", p.iterationDone(fold(t, seq([]Payload{started(ModeTools, 9)}, call(1, "no", true))...)), "look for stuck", `iteration.ended{"n":1,"status":"failed"}`)
	want(t, "nothing repeated", p.stuck(fold(t, seq([]Payload{started(ModeTools, 9)}, call(1, "a", false), closed(1))...)), "nothing")
	repeated := seq([]Payload{started(ModeTools, 9)}, call(1, "same", false), closed(1), call(2, "same", false), closed(2), call(3, "same", false), closed(3), call(4, "same", false), closed(4))
	want(t, "the same call and result again: nudge", p.stuck(fold(t, repeated...)), "nothing",
		`stuck.detected{"pattern":"repeated_action_observation"`, `"kind":"nudge"`)
	nudged := seq(repeated, []Payload{&StuckDetected{Pattern: "repeated_action_observation", Action: "nudge"}}, call(5, "same", false), closed(5))
	want(t, "again after the nudge: wait for a person", p.stuck(fold(t, nudged...)), "nothing",
		`"action":"pause"`, `session.waiting{"reason":"stuck"`)
	ending := seq([]Payload{&SessionStarted{Task: "t", Mode: ModeTools, Limits: Limits{MaxIterations: 9, OnStuck: "end"}}}, nudged[1:])
	want(t, "with on-stuck end: end for the limit", p.stuck(fold(t, ending...)), "end for stuck", `"action":"end"`)
}

func TestPolicyBoundaryAndVerification(t *testing.T) {
	p := policy{texts: Texts{}.withDefaults()}
	stop := builtinConditions(Limits{MaxIterations: 2})
	fresh := fold(t, started(ModeTools, 2))
	want(t, "the first iteration", p.boundary(fresh, t0, stop, CallEstimate{}, "", false), "call model", `iteration.started{"n":1}`)
	want(t, "a pause request", p.boundary(fresh, t0, stop, CallEstimate{}, "lunch", true), "nothing", `session.paused{"reason":"user","detail":"lunch"}`)
	one := fold(t, seq([]Payload{started(ModeTools, 2)}, inIteration(1, "x"), []Payload{&IterationEnded{N: 1, Status: IterationCompleted}})...)
	want(t, "the last iteration is announced", p.boundary(one, t0, stop, CallEstimate{}, "", false), "call model", `iteration.started{"n":2}`, `"key":"last_iteration"`)
	two := fold(t, seq([]Payload{started(ModeTools, 2)}, inIteration(1, "x"), []Payload{&IterationEnded{N: 1, Status: IterationCompleted}}, inIteration(2, "y"), []Payload{&IterationEnded{N: 2, Status: IterationCompleted}})...)
	want(t, "the iteration limit", p.boundary(two, t0, stop, CallEstimate{}, "", false), "end for max_iterations")
	oneStep := fold(t, started(ModeSelfReasoning, 1))
	want(t, "a one-step self-reasoning session hears it is the last", p.boundary(oneStep, t0, builtinConditions(Limits{MaxIterations: 1}), CallEstimate{}, "", false),
		"call model", `iteration.started{"n":1}`, `"key":"last_iteration"`)
	timed := builtinConditions(Limits{MaxIterations: 9, Timeout: Duration(time.Minute)})
	want(t, "the time limit, by the given clock", p.boundary(fresh, t0.Add(time.Hour), timed, CallEstimate{}, "", false), "end for timeout")
	budgeted := fold(t, &SessionStarted{Task: "t", Mode: ModeTools, Limits: Limits{MaxIterations: 9, BudgetUSD: 0.01, BudgetTokens: 5000}})
	want(t, "a first call that could pass the cost budget", p.boundary(budgeted, t0, stop, CallEstimate{InputTokens: 900, OutputTokens: 4096, CostUSD: 0.0346}, "", false), "end for budget_cost")
	want(t, "a first call that could pass the token budget", p.boundary(budgeted, t0, stop, CallEstimate{InputTokens: 1000, OutputTokens: 4096}, "", false), "end for budget_tokens")
	want(t, "a call the budgets cover", p.boundary(budgeted, t0, stop, CallEstimate{InputTokens: 900, OutputTokens: 4096, CostUSD: 0.01}, "", false), "call model", `iteration.started{"n":1}`)

	failing := &VerificationFinished{Trigger: "completion", Outcome: VerifyFail, Checks: []VerifyCheck{{Name: "go test", Output: "FAIL"}}}
	answered := fold(t, seq([]Payload{started(ModeTools, 3)}, inIteration(1, "done"), []Payload{&IterationEnded{N: 1, Status: IterationCompleted, Answer: "done"}, failing})...)
	want(t, "no verifier", p.verified(answered, "done", ""), "nothing", `session.ended{"status":"completed","reason":"completed","answer":"done"}`)
	want(t, "verification passed", p.verified(answered, "done", VerifyPass), "nothing", `"status":"completed"`)
	want(t, "verification failed, iterations left", p.verified(answered, "done", VerifyFail), "nothing", `"kind":"verification"`)
	atLimit := fold(t, seq([]Payload{started(ModeTools, 1)}, inIteration(1, "done"), []Payload{&IterationEnded{N: 1, Status: IterationCompleted, Answer: "done"}, failing})...)
	want(t, "verification failed at the limit", p.verified(atLimit, "done", VerifyFail), "nothing", `session.ended{"status":"failed","reason":"verification_failed"`)
	// The answer stays owed until the verdict's events are recorded: a
	// crash before them settles it again.
	if answered.PendingAnswer != "done" {
		t.Errorf("pending answer %q, want done", answered.PendingAnswer)
	}
	settled := fold(t, seq([]Payload{started(ModeTools, 3)}, inIteration(1, "done"), []Payload{&IterationEnded{N: 1, Status: IterationCompleted, Answer: "done"}, failing},
		p.verified(answered, "done", VerifyFail).Events)...)
	if settled.PendingAnswer != "" {
		t.Errorf("the feedback did not settle the answer: %q", settled.PendingAnswer)
	}
}

// A model that keeps failing with errors a retry cannot fix hands the call
// to the next fallback model; a tool error, a bad answer or a model with
// no fallback left does not switch.
func TestPolicyFallbackModels(t *testing.T) {
	p := policy{texts: Texts{}.withDefaults()}
	withFallbacks := &SessionStarted{Task: "t", Model: "openai/a", Mode: ModeTools, Limits: Limits{MaxIterations: 5}, FallbackModels: []string{"openai/b", "openai/c"}}
	open := fold(t, withFallbacks, &IterationStarted{N: 1})
	onB := fold(t, withFallbacks, &IterationStarted{N: 1}, &ModelSwitched{Iteration: 1, From: "openai/a", To: "openai/b", Why: "404"})
	onC := fold(t, withFallbacks, &IterationStarted{N: 1}, &ModelSwitched{Iteration: 1, From: "openai/a", To: "openai/b"}, &ModelSwitched{Iteration: 1, From: "openai/b", To: "openai/c"})
	cases := []struct {
		name   string
		st     *State
		f      modelFault
		events []string
	}{
		{"a gone model moves on", open, modelFault{Err: "HTTP 404: model gone", Unavailable: true}, []string{`model.switched{"iteration":1,"from":"openai/a","to":"openai/b","why":"HTTP 404: model gone"}`}},
		{"retries that ran out move on", onB, modelFault{Err: "HTTP 503", Retryable: true}, []string{`model.switched{"iteration":1,"from":"openai/b","to":"openai/c","why":"HTTP 503"}`}},
		{"the last model pauses", onC, modelFault{Err: "HTTP 503", Retryable: true}, []string{`session.paused{"reason":"model_error"`}},
		{"a timeout is tried once more on the same model", open, modelFault{Err: "slow", Timeout: true}, []string{`warning{"code":"model_call_retry"`}},
		{"a bad request is not the model's to fix", open, modelFault{Err: "401"}, []string{`iteration.ended{"n":1,"status":"failed","error":"401"}`, `session.ended{"status":"error"`}},
	}
	for _, c := range cases {
		want(t, c.name, p.modelFailed(c.st, c.f), "nothing", c.events...)
	}
	if onB.CurrentModel != "openai/b" || onB.current().Model != "openai/b" || open.current().Model != "openai/a" {
		t.Errorf("the state's model: %q, iteration's %q (before the switch %q)", onB.CurrentModel, onB.current().Model, open.current().Model)
	}
	// A tool error is the iteration's, never the model's: no switch.
	toolErr := fold(t, withFallbacks, &IterationStarted{N: 1},
		&ModelResponded{Iteration: 1, ToolCalls: []model.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{}`)}}},
		&ToolStarted{Iteration: 1, CallID: "c1", Name: "read", Input: json.RawMessage(`{}`)},
		&ToolFinished{Iteration: 1, CallID: "c1", Name: "read", Output: "no such file", IsError: true})
	got := describe(p.iterationDone(toolErr))
	if strings.Contains(got, "model.switched") {
		t.Errorf("a tool error switched models: %s", got)
	}
	if got := describe(p.reply(fold(t, seq([]Payload{withFallbacks}, inIteration(1, ""))...), "", Recovered{})); strings.Contains(got, "model.switched") {
		t.Errorf("a bad answer switched models: %s", got)
	}
}

// Where a session stands, read from its state: the run loop and a
// stepwise driver both go by it.
func TestPhaseOf(t *testing.T) {
	call := model.ToolCall{ID: "c1", Name: "add", Arguments: json.RawMessage(`{}`)}
	cases := []struct {
		name string
		st   []Payload
		want phase
		kind StepKind
	}{
		{"a new session is at a boundary", []Payload{started(ModeTools, 5)}, phaseBoundary, StepBookkeeping},
		{"an open iteration calls the model", seq([]Payload{started(ModeTools, 5), &IterationStarted{N: 1}}), phaseModel, StepModel},
		{"a reply with calls runs them", seq([]Payload{started(ModeTools, 5), &IterationStarted{N: 1}, &ModelResponded{Iteration: 1, ToolCalls: []model.ToolCall{call}}}), phaseTools, StepTools},
		{"a started call still runs", seq([]Payload{started(ModeTools, 5), &IterationStarted{N: 1}, &ModelResponded{Iteration: 1, ToolCalls: []model.ToolCall{call}},
			&ToolStarted{Iteration: 1, CallID: "c1", Name: "add"}}), phaseTools, StepTools},
		{"every call answered closes the iteration", seq([]Payload{started(ModeTools, 5), &IterationStarted{N: 1}, &ModelResponded{Iteration: 1, ToolCalls: []model.ToolCall{call}},
			&ToolFinished{Iteration: 1, CallID: "c1", Name: "add", Output: "3"}}), phaseIterationDone, StepBookkeeping},
		{"an answer not settled is settled", seq([]Payload{started(ModeTools, 5)}, inIteration(1, "done"), []Payload{&IterationEnded{N: 1, Status: IterationCompleted, Answer: "done"}}),
			phaseSettle, StepBookkeeping},
		{"a closed iteration is a boundary", seq([]Payload{started(ModeTools, 5)}, inIteration(1, "hm"), []Payload{&IterationEnded{N: 1, Status: IterationCompleted}}),
			phaseBoundary, StepBookkeeping},
	}
	for _, c := range cases {
		st := fold(t, c.st...)
		if got := phaseOf(st); got != c.want {
			t.Errorf("%s: phase %d, want %d", c.name, got, c.want)
		}
		if got := NextStep(st); got != c.kind {
			t.Errorf("%s: step %q, want %q", c.name, got, c.kind)
		}
	}
	if got := NextStep(fold(t, started(ModeTools, 5), &SessionPaused{Reason: ReasonUser})); got != StepNone {
		t.Errorf("a paused session steps: %q", got)
	}
}

// The decisions about a tool call, as a table: crash recovery, refusals,
// approval.
func TestPolicyToolCall(t *testing.T) {
	noop := func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Result{}, nil }
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	tools := tool.MustRegistry(
		tool.Func(model.ToolSpec{Name: "count", Parameters: schema}, noop, tool.MarkIdempotent()),
		tool.Func(model.ToolSpec{Name: "write", Parameters: schema}, noop))
	ask := func(t tool.Tool) Policy {
		switch t.Spec().Name {
		case "write":
			return PolicyAsk
		}
		return PolicyAuto
	}
	deny := func(tool.Tool) Policy { return PolicyDeny }
	args := json.RawMessage(`{"n":1}`)
	reply := func(limits Limits, calls ...string) []Payload {
		var tc []model.ToolCall
		for i, name := range calls {
			tc = append(tc, model.ToolCall{ID: fmt.Sprintf("c%d", i+1), Name: name, Arguments: args})
		}
		return []Payload{&SessionStarted{Task: "t", Limits: limits}, &IterationStarted{N: 1}, &ModelResponded{Iteration: 1, ToolCalls: tc}}
	}
	l := Limits{MaxIterations: 5}
	hash := ArgsHash("write", args)
	cases := []struct {
		name     string
		st       []Payload
		approval func(tool.Tool) Policy
		next     string
		events   []string
	}{
		{"a valid call runs", reply(l, "count"), nil, `run {"n":1}`, []string{`tool.started{"iteration":1,"call_id":"c1","name":"count","input":{"n":1}}`}},
		{"an interrupted idempotent call runs again with its input", seq(reply(l, "count"), []Payload{&ToolStarted{Iteration: 1, CallID: "c1", Name: "count", Input: json.RawMessage(`{"n":7}`)}}), nil,
			`run again {"n":7}`, []string{`warning{"code":"tool_rerun"`}},
		{"an interrupted call of another tool has an unknown outcome", seq(reply(l, "write"), []Payload{&ToolStarted{Iteration: 1, CallID: "c1", Name: "write", Input: args}}), nil,
			"nothing", []string{`"call_id":"c1","name":"write","output":"The earlier write call was interrupted`}},
		{"the unknown outcome is marked", seq(reply(l, "write"), []Payload{&ToolStarted{Iteration: 1, CallID: "c1", Name: "write", Input: args}}), nil,
			"nothing", []string{`"is_error":true,"duration_ms":0,"unknown":true}`}},
		{"a call past the per-turn limit is refused", seq(reply(Limits{MaxIterations: 5, MaxToolCallsPerTurn: 1}, "count", "count"),
			[]Payload{&ToolFinished{Iteration: 1, CallID: "c1", Name: "count", Output: "1"}}), nil,
			"nothing", []string{`"call_id":"c2","name":"count","output":"refused: this reply asked for 2 tool calls but at most 1 run per turn`}},
		{"a call past the tool-call budget is refused", seq(reply(Limits{MaxIterations: 5, BudgetToolCalls: 1}, "count", "count"),
			[]Payload{&ToolStarted{Iteration: 1, CallID: "c1", Name: "count", Input: args}, &ToolFinished{Iteration: 1, CallID: "c1", Name: "count", Output: "1"}}), nil,
			"nothing", []string{`"call_id":"c2","name":"count","output":"refused: the session's budget of 1 tool calls is used up`}},
		{"arguments the schema rejects are refused", []Payload{started(ModeTools, 5), &IterationStarted{N: 1},
			&ModelResponded{Iteration: 1, ToolCalls: []model.ToolCall{{ID: "c1", Name: "count", Arguments: json.RawMessage(`{"n":"x"}`)}}}}, nil,
			"nothing", []string{`"refused":true`}},
		{"an unknown tool is refused", reply(l, "rm"), nil, "nothing", []string{`"name":"rm","output":"unknown tool \"rm\"`}},
		{"a tool the session does not allow is refused", reply(l, "count"), deny,
			"nothing", []string{`"output":"refused: the count tool is not allowed in this session"`}},
		{"a call that needs approval waits", reply(l, "write"), ask,
			"nothing", []string{`approval.requested{"call_id":"c1","name":"write","input":{"n":1},"args_hash":"` + hash, `session.waiting{"reason":"approval"`}},
		{"a decision for other arguments asks again", seq(reply(l, "write"), []Payload{&ApprovalDecided{CallID: "c1", ArgsHash: "other", Approved: true}}), ask,
			"nothing", []string{`approval.requested`, `session.waiting`}},
		{"an approved call runs", seq(reply(l, "write"), []Payload{&ApprovalDecided{CallID: "c1", ArgsHash: hash, Approved: true}}), ask,
			`run {"n":1}`, []string{`tool.started{"iteration":1,"call_id":"c1","name":"write"`}},
		{"an edited call runs with the edit", seq(reply(l, "write"), []Payload{&ApprovalDecided{CallID: "c1", ArgsHash: hash, Approved: true, EditedInput: json.RawMessage(`{"n":2}`)}}), ask,
			`run {"n":2}`, []string{`"input":{"n":2}`}},
		{"an invalid edit is refused", seq(reply(l, "write"), []Payload{&ApprovalDecided{CallID: "c1", ArgsHash: hash, Approved: true, EditedInput: json.RawMessage(`{"n":"two"}`)}}), ask,
			"nothing", []string{`"output":"the user's edited arguments are invalid: `}},
		{"a denied call is refused with the reason", seq(reply(l, "write"), []Payload{&ApprovalDecided{CallID: "c1", ArgsHash: hash, Reason: "not now"}}), ask,
			"nothing", []string{`"output":"denied by the user: not now","is_error":true,"duration_ms":0,"refused":true`}},
	}
	for _, c := range cases {
		p := policy{texts: Texts{}.withDefaults(), tools: tools, approval: c.approval}
		want(t, c.name, p.toolCall(fold(t, c.st...)), c.next, c.events...)
	}
}

// A session a limit stops: the wrap-up call when it is allowed, then the
// end with the best answer it has.
func TestPolicyLimitEnd(t *testing.T) {
	p := policy{texts: Texts{}.withDefaults()}
	steps := end(ReasonMaxIterations, "made 2 of 2 model calls")
	answered := seq([]Payload{started(ModeTools, 2)}, inIteration(1, "half done"), []Payload{&IterationEnded{N: 1, Status: IterationCompleted}})
	off := false
	noWrapUp := &SessionStarted{Task: "t", Limits: Limits{MaxIterations: 2, WrapUp: &off}}
	budget := &SessionStarted{Task: "t", Limits: Limits{MaxIterations: 2, BudgetTokens: 100}}
	for _, c := range []struct {
		name        string
		st          []Payload
		d           Decision
		interrupted bool
		call        CallEstimate
		want        bool
	}{
		{"after a model call", answered, steps, false, CallEstimate{}, true},
		{"not before any", []Payload{started(ModeTools, 2)}, steps, false, CallEstimate{}, false},
		{"not when turned off", seq([]Payload{noWrapUp}, inIteration(1, "x")), steps, false, CallEstimate{}, false},
		{"not when interrupted", answered, steps, true, CallEstimate{}, false},
		{"not past a budget", seq([]Payload{budget}, inIteration(1, "x")), end(ReasonBudgetTokens, "used"), false, CallEstimate{}, false},
		{"not when the call could pass a budget", seq([]Payload{budget}, inIteration(1, "x")), steps, false, CallEstimate{InputTokens: 90, OutputTokens: 20}, false},
		{"when it fits the budget", seq([]Payload{budget}, inIteration(1, "x")), steps, false, CallEstimate{InputTokens: 10, OutputTokens: 20}, true},
		{"not twice", seq(answered, []Payload{&MessageAdded{Role: model.RoleUser, Content: "wrap up", Kind: KindWrapUp}, &ModelResponded{Iteration: 1, Text: "final", WrapUp: true}}),
			steps, false, CallEstimate{}, false},
	} {
		got := p.wrapUp(fold(t, c.st...), c.d, c.interrupted, c.call)
		if (got != nil) != c.want || got != nil && (got.Kind != KindWrapUp || got.Content != p.texts.WrapUp(c.d.Reason)) {
			t.Errorf("%s: wrap-up %+v, want %v", c.name, got, c.want)
		}
	}
	final := "the best I have"
	for _, c := range []struct {
		name   string
		st     []Payload
		d      Decision
		reply  *string
		events []string
	}{
		{"the last answer, partial", answered, steps, nil,
			[]string{`session.ended{"status":"failed","reason":"max_iterations","detail":"made 2 of 2 model calls","answer":"half done","partial":true}`}},
		{"the wrap-up reply", seq(answered, []Payload{&ModelResponded{Iteration: 1, Text: final, WrapUp: true}}), steps, &final,
			[]string{`"answer":"the best I have","partial":true`}},
		{"an empty wrap-up reply is no answer", seq(answered, []Payload{&ModelResponded{Iteration: 1, Text: " ", WrapUp: true}}), steps, new(string),
			[]string{`session.ended{"status":"failed","reason":"max_iterations","detail":"made 2 of 2 model calls"}`}},
		{"a stop condition's own status", answered, Decision{Action: End, Status: StatusTerminated, Reason: ReasonStuck}, nil,
			[]string{`session.ended{"status":"terminated","reason":"stuck"`}},
		{"a limit that counts as done completes", answered, Decision{Action: End, Reason: ReasonCompleted}, nil,
			[]string{`session.ended{"status":"completed","reason":"completed"`}},
		{"an open iteration fails first", seq([]Payload{started(ModeTools, 2)}, inIteration(1, "x")), steps, nil,
			[]string{`iteration.ended{"n":1,"status":"failed"}`, `session.ended{"status":"failed"`}},
		{"self-reasoning keeps what follows the marker after a wrap-up", seq([]Payload{started(ModeSelfReasoning, 2)}, inIteration(1, "thinking"),
			[]Payload{&IterationEnded{N: 1, Status: IterationCompleted}, &ModelResponded{Iteration: 1, Text: "so " + DefaultMarker + " 42", WrapUp: true}}), steps, nil,
			[]string{`"answer":"42","partial":true`}},
	} {
		want(t, c.name, Step{Events: limitEnd(fold(t, c.st...), c.d, c.reply)}, "nothing", c.events...)
	}
}

// A termination answers the calls that have no result, fails the open
// iteration and ends the session as the reason says.
func TestTerminated(t *testing.T) {
	calls := []model.ToolCall{{ID: "a", Name: "x", Arguments: json.RawMessage(`{}`)}, {ID: "b", Name: "y", Arguments: json.RawMessage(`{}`)}}
	st := fold(t, started(ModeTools, 5), &IterationStarted{N: 1}, &ModelResponded{Iteration: 1, Text: "trying", ToolCalls: calls},
		&ToolFinished{Iteration: 1, CallID: "a", Name: "x", Output: "ok"})
	want(t, "terminated mid-reply", Step{Events: terminated(st, "user")}, "nothing",
		`tool.finished{"iteration":1,"call_id":"b","name":"y","output":"not run: the session was terminated","is_error":true,"duration_ms":0,"refused":true}`,
		`iteration.ended{"n":1,"status":"failed","error":"terminated: user"}`,
		`session.ended{"status":"terminated","reason":"terminated","detail":"user","answer":"trying","partial":true}`)
	// Plan failure ends a final answer before verification.
	plan := &PlanUpdated{Goal: "g", Status: PlanFailed, Reason: "no way", Steps: []PlanStep{{Title: "a", Status: "failed"}}}
	if got := planEnd(fold(t, started(ModeTools, 5)), "done"); got != nil {
		t.Errorf("plan end without a plan: %v", got)
	}
	want(t, "a failed plan", Step{Events: planEnd(fold(t, started(ModeTools, 5), plan), "done")}, "nothing",
		`session.ended{"status":"failed","reason":"plan_failed","detail":"the model failed its plan: no way","answer":"done","partial":true}`)
}
