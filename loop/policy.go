package loop

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// The policy decides; the executor (executor.go, step.go) performs and
// commits. Every function here is pure: it reads a state and a few facts
// (a model's reply, a failure, the time) and returns the events to record
// and at most one effect to perform next. No goroutines, clocks, stores or
// I/O: the same functions can drive a session in this process or as a
// durable workflow, and they are tested as tables (policy_test.go).

// next says which effect a Step asks for.
type next int

const (
	// nothing more: record the events and look at the state again.
	nothing next = iota
	// settleAnswer settles Step.Answer: gate, verification, end.
	settleAnswer
	// callModel makes the current iteration's model call.
	callModel
	// endForLimit ends the session for Step.Limit (after the wrap-up call).
	endForLimit
	// lookForStuck asks the policy about repetition, with the events applied.
	lookForStuck
	// runTool runs the first pending call with Step.Input, its tool.started
	// among the events.
	runTool
	// rerunTool runs the first pending call again with Step.Input: a crash
	// interrupted it, and its tool is idempotent.
	rerunTool
)

// Step is a decision: events to record, then at most one effect.
type Step struct {
	Events []Payload
	Next   next
	// Answer is the final answer to settle (settleAnswer).
	Answer string
	// Limit is why the session ends (endForLimit).
	Limit Decision
	// Input is the arguments the pending call runs with (runTool,
	// rerunTool): the model's, a person's edit, or what the interrupted
	// run was given.
	Input json.RawMessage
}

// policy holds what the decisions need besides the state: the texts the
// model is sent, whether a gate judges answers, the session's tools (to
// validate a call and read what its tool declares) and its approval rule.
type policy struct {
	texts    Texts
	hasGate  bool
	tools    *tool.Registry
	approval func(tool.Tool) Policy
}

// phase is what a running session does next, read from its state alone.
// The run loop (Session.turn) and a stepwise driver (NextStep) both go by
// phaseOf, so the two cannot disagree about where a session stands.
type phase int

const (
	// phaseBoundary: between iterations — a person's messages, controls,
	// stop conditions, then the next iteration.
	phaseBoundary phase = iota
	// phaseSettle: a final answer is recorded but not settled (a crash
	// came between).
	phaseSettle
	// phaseModel: the open iteration's model call.
	phaseModel
	// phaseTools: the open iteration's calls that have no result yet.
	phaseTools
	// phaseIterationDone: every call of the open iteration has a result.
	phaseIterationDone
)

// phaseOf is the phase of a running session in state st.
func phaseOf(st *State) phase {
	it := st.current()
	open := it != nil && it.Status == IterationInProgress
	switch {
	case st.PendingAnswer != "" && !open:
		return phaseSettle
	case open && !it.Responded:
		return phaseModel
	case open && len(st.PendingCalls) > 0:
		return phaseTools
	case open:
		return phaseIterationDone
	}
	return phaseBoundary
}

// iterationEnd is the one producer of iteration.ended: it closes the open
// iteration, if any.
func iterationEnd(st *State, status IterationStatus, errText, answer string) []Payload {
	it := st.current()
	if it == nil || it.Status != IterationInProgress {
		return nil
	}
	return []Payload{&IterationEnded{N: it.N, Status: status, Error: errText, Answer: answer}}
}

// sessionEnd is the one producer of session.ended: an open iteration is
// closed first — failed (with iterationError), unless the session completed.
func sessionEnd(st *State, e *SessionEnded, iterationError string) []Payload {
	status := IterationFailed
	if e.Status == StatusCompleted {
		status = IterationCompleted
	}
	return append(iterationEnd(st, status, iterationError, ""), e)
}

// terminated is the record of a person's termination: the calls without a
// result get one saying they did not run, the open iteration fails, and
// the session ends with the outcome the reason maps to.
func terminated(st *State, reason string) []Payload {
	out := make([]Payload, 0, len(st.PendingCalls)+2)
	for _, c := range st.PendingCalls {
		out = append(out, &ToolFinished{Iteration: st.CurrentIteration, CallID: c.ID, Name: c.Name, Output: "not run: the session was terminated", IsError: true, Refused: true})
	}
	status, why := TerminationOutcome(reason)
	return append(out, sessionEnd(st, &SessionEnded{Status: status, Reason: why, Detail: reason, Answer: st.LastAnswer(), Partial: status != StatusCompleted}, "terminated: "+reason)...)
}

// toolCall decides the first pending call of the open iteration. A call a
// crash interrupted (tool.started without a result) runs again only when
// its tool declares itself idempotent; otherwise the model is told its
// outcome is unknown. A call past the per-turn limit or the session's
// tool-call budget, with arguments its schema rejects, or to a tool the
// session does not allow is refused, and the model reads why. A call that
// needs approval waits for a person until a decision for exactly these
// arguments is recorded; then it runs (with their edit, if valid) or is
// refused with their reason. Every other call runs.
func (p policy) toolCall(st *State) Step {
	call, it := st.PendingCalls[0], st.current()
	refuse := func(msg string) Step {
		return Step{Events: []Payload{&ToolFinished{Iteration: it.N, CallID: call.ID, Name: call.Name, Output: msg, IsError: true, Refused: true}}}
	}
	for _, open := range st.OpenToolCalls {
		if open.CallID != call.ID {
			continue
		}
		if t, ok := p.tools.Lookup(call.Name); ok && tool.IsIdempotent(t) {
			return Step{Events: []Payload{&Warning{Code: WarnToolRerun, Message: fmt.Sprintf("re-running %s (call %s) after an interruption: the tool is idempotent", call.Name, call.ID)}},
				Next: rerunTool, Input: open.Input}
		}
		return Step{Events: []Payload{&ToolFinished{Iteration: it.N, CallID: call.ID, Name: call.Name, Output: p.texts.UnknownOutcome(call.Name), IsError: true, Unknown: true}}}
	}
	position := 0
	for i, c := range it.ToolCalls {
		if c.ID == call.ID {
			position = i + 1
		}
	}
	if limit := st.Limits.MaxToolCallsPerTurn; limit > 0 && position > limit {
		return refuse(fmt.Sprintf("refused: this reply asked for %d tool calls but at most %d run per turn; ask for the rest in your next reply", len(it.ToolCalls), limit))
	}
	if limit := st.Limits.BudgetToolCalls; limit > 0 && st.ToolCallCount >= limit {
		return refuse(fmt.Sprintf("refused: the session's budget of %d tool calls is used up; give your final answer", limit))
	}
	if err := p.tools.Validate(call.Name, call.Arguments); err != nil {
		return refuse(err.Error())
	}
	t, _ := p.tools.Lookup(call.Name)
	input := call.Arguments
	if p.approval != nil {
		switch p.approval(t) {
		case PolicyDeny:
			return refuse(fmt.Sprintf("refused: the %s tool is not allowed in this session", call.Name))
		case PolicyAsk:
			hash := ArgsHash(call.Name, call.Arguments)
			if st.allows(call.Name, hash) {
				break // a person allowed this exact call for the session
			}
			dec, decided := st.Decisions[call.ID]
			if !decided || dec.ArgsHash != hash {
				return Step{Events: []Payload{&ApprovalRequested{CallID: call.ID, Name: call.Name, Input: call.Arguments, ArgsHash: hash},
					&SessionWaiting{Reason: ReasonApproval, Question: fmt.Sprintf("Allow %s %s?", call.Name, compactJSON(call.Arguments))}}}
			}
			if !dec.Approved {
				why := "denied by the user"
				if dec.Reason != "" {
					why += ": " + dec.Reason
				}
				return refuse(why)
			}
			if len(dec.EditedInput) > 0 {
				if err := p.tools.Validate(call.Name, dec.EditedInput); err != nil {
					return refuse("the user's edited arguments are invalid: " + err.Error())
				}
				input = dec.EditedInput
			}
		}
	}
	return Step{Events: []Payload{&ToolStarted{Iteration: it.N, CallID: call.ID, Name: call.Name, Input: input}}, Next: runTool, Input: input}
}

// reply decides what a reply without tool calls means: a correction
// request for an unreadable tool call, a continuation, a retry of an empty
// reply, a question to a person when the model gives up, or a final
// answer to settle.
func (p policy) reply(st *State, text string, rec Recovered) Step {
	t := p.texts
	if rec.Attempted && !st.previousWasCorrection() {
		return Step{Events: []Payload{&MessageAdded{Role: model.RoleUser, Content: t.Correction(rec.Problem), Kind: KindCorrection}}}
	}
	if rec.Attempted {
		return Step{Events: append([]Payload{&Warning{Code: WarnUnrecoveredToolCall, Message: "the model's tool call could not be read after one correction: " + rec.Problem}},
			sessionEnd(st, &SessionEnded{Status: StatusFailed, Reason: ReasonMalformedToolCall,
				Detail: "the model's tool call could not be read after a correction request (" + rec.Problem + "); try a model with native tool calls or another --model"},
				"malformed tool call: "+rec.Problem)...)}
	}
	text = st.continuedText(text)
	answer, marked := finalAnswer(text, st.Marker)
	switch {
	case marked:
		text = answer // the model said it is done: no continuation
	case st.Mode == ModeSelfReasoning:
		if st.CurrentIteration < st.MaxIterations {
			return Step{Events: []Payload{&MessageAdded{Role: model.RoleUser, Content: t.Continue(st.Marker), Kind: KindContinue}}}
		}
		return Step{} // the limit ends it, with the reasoning so far as a partial answer
	case !p.hasGate && st.Plan != nil && planPending(st.Plan) && st.planContinuations() < 3 && st.CurrentIteration < st.MaxIterations:
		return Step{Events: []Payload{
			&Warning{Code: WarnProseWithPlan, Message: "the model answered without a tool call while its plan has pending steps; continuing"},
			&MessageAdded{Role: model.RoleUser, Content: t.PlanContinue(st.Plan), Kind: KindContinue},
		}}
	}
	if strings.TrimSpace(text) == "" {
		return p.emptyReply(st)
	}
	if !st.planFailed() && AdmitsFailure(text) {
		return Step{Events: gaveUp(st, text)}
	}
	return Step{Events: iterationEnd(st, IterationCompleted, "", text), Next: settleAnswer, Answer: text}
}

// truncated decides what a reply the token limit cut off means: it is not
// an answer, and tool calls in it may have cut arguments, so none of them
// run. The model is asked to continue a bounded number of times; then the
// session fails.
func (p policy) truncated(st *State, text string, hadCalls bool) Step {
	var out []Payload
	if hadCalls {
		out = append(out, &Warning{Code: WarnTruncatedToolCalls, Message: "the reply hit the token limit with tool calls in it; none of them ran, since their arguments may be cut"})
	}
	if st.trailingKind(KindTruncated) >= maxTruncatedContinuations || st.CurrentIteration >= st.MaxIterations {
		return Step{Events: append(out, sessionEnd(st, &SessionEnded{Status: StatusFailed, Reason: ReasonTruncated,
			Detail: "the model's replies kept hitting the token limit; raise the model's max tokens or ask for a shorter answer",
			Answer: st.continuedText(text), Partial: true}, "reply cut off by the token limit")...)}
	}
	msg := "Your reply was cut off by the token limit. Continue exactly where it stopped, without repeating what you wrote."
	if hadCalls {
		msg = "Your reply was cut off by the token limit in the middle of a tool call, so no tool ran. Send the tool call again, complete; keep its arguments short (write large files in parts)."
	}
	return Step{Events: append(out, &MessageAdded{Role: model.RoleUser, Content: msg, Kind: KindTruncated})}
}

// emptyReply decides what a reply with no text and no tool call means: the
// model is asked once for an answer or a tool call; a second empty reply
// in a row fails the session.
func (p policy) emptyReply(st *State) Step {
	if st.trailingKind(KindEmptyReply) >= 1 || st.CurrentIteration >= st.MaxIterations {
		return Step{Events: sessionEnd(st, &SessionEnded{Status: StatusFailed, Reason: ReasonEmptyReply,
			Detail: "the model sent empty replies (no text and no tool call); check the model and its context size", Answer: st.LastAnswer(), Partial: true}, "empty reply")}
	}
	return Step{Events: []Payload{
		&Warning{Code: WarnEmptyReply, Message: "the model's reply was empty; asking it again"},
		&MessageAdded{Role: model.RoleUser, Content: "Your reply was empty. Continue the task: call a tool, or write your final answer.", Kind: KindEmptyReply},
	}}
}

// gaveUp stops the session for a person after the model said it cannot do
// the task: they can reply with guidance (the session goes on) or
// terminate it.
func gaveUp(st *State, answer string) []Payload {
	return append(iterationEnd(st, IterationCompleted, "", ""), &SessionWaiting{Reason: ReasonModelGaveUp,
		Question: "The model says it cannot finish the task:\n\n" + strings.TrimSpace(answer) +
			"\n\nReply with guidance to let it try again, or terminate the session (reason failed, or different_approach)."})
}

// modelFault is a failed model call, as the policy sees it.
type modelFault struct {
	Err                                           string
	Retryable, Timeout, SessionTimeout, Malformed bool
	// Unavailable: the model is gone or cannot take this conversation
	// (model.ErrModelUnavailable); no retry fixes it.
	Unavailable bool
}

// modelFailed decides what follows a failed model call (already recorded
// as model.failed): a call that timed out or got an unreadable reply is
// made once more, then the session pauses; retries that ran out pause it
// (resume redoes the call); a session timeout fails the iteration and the
// stop conditions decide; anything else ends the session with an error.
func (p policy) modelFailed(st *State, f modelFault) Step {
	fault := (f.Timeout && !f.SessionTimeout) || f.Malformed
	if next := st.nextModel(); next != "" && (f.Retryable || f.Unavailable) && !fault {
		// Retries cannot fix it: the next fallback model makes the call.
		return Step{Events: []Payload{&ModelSwitched{Iteration: st.CurrentIteration, From: st.CurrentModel, To: next, Why: f.Err}}}
	}
	switch {
	case fault && st.current().Faults < 2:
		return Step{Events: []Payload{&Warning{Code: WarnModelCallRetry, Message: "the model call failed (" + f.Err + "); trying once more"}}}
	case fault && f.Timeout:
		return Step{Events: []Payload{&SessionPaused{Reason: ReasonModelTimeout, Detail: "the model call timed out twice in a row (" + f.Err + "); resume the session to try again, with a larger --model-timeout for a slow model"}}}
	case fault:
		return Step{Events: []Payload{&SessionPaused{Reason: ReasonModelError, Detail: "the provider sent an unreadable reply twice in a row (" + f.Err + "); check --base-url and the server, then resume the session"}}}
	case f.Retryable:
		return Step{Events: []Payload{&SessionPaused{Reason: ReasonModelError, Detail: "the model kept failing: " + f.Err + " — resume the session to retry"}}}

	case f.Timeout:
		return Step{Events: iterationEnd(st, IterationFailed, f.Err, "")}
	}
	return Step{Events: sessionEnd(st, &SessionEnded{Status: StatusError, Reason: ReasonError, Detail: f.Err, Answer: st.LastAnswer()}, f.Err)}
}

// iterationDone closes an iteration whose calls all have results; then
// the session looks for repetition (stuck).
func (p policy) iterationDone(st *State) Step {
	it := st.current()
	status := IterationCompleted
	errs := 0
	for _, c := range it.ToolCalls {
		if c.Status == ToolError {
			errs++
		}
	}
	if it.Error != "" || (len(it.ToolCalls) > 0 && errs == len(it.ToolCalls)) {
		status = IterationFailed
	}
	return Step{Events: iterationEnd(st, status, "", ""), Next: lookForStuck}
}

// stuck looks for repetition over the finished iterations: the first time
// the session seems stuck the model is told; after that the session waits
// for a person (or ends, with on-stuck end).
func (p policy) stuck(st *State) Step {
	var out []Payload
	pattern, detail, reason, found := st.DetectStuck()
	switch {
	case !found:
	case st.StuckDetections == 0 && !st.Limits.StuckNoNudge:
		out = append(out, &StuckDetected{Pattern: pattern, Detail: detail, Action: "nudge"},
			&MessageAdded{Role: model.RoleUser, Content: p.texts.StuckNudge(StuckDescription(pattern), detail), Kind: KindNudge})
	case st.Limits.OnStuck == "end":
		return Step{Events: append(out, &StuckDetected{Pattern: pattern, Detail: detail, Action: "end"}), Next: endForLimit,
			Limit: Decision{Action: End, Status: StatusFailed, Reason: reason, Detail: detail}}
	default:
		out = append(out, &StuckDetected{Pattern: pattern, Detail: detail, Action: "pause"},
			&SessionWaiting{Reason: reason, Question: "The session seems stuck (" + detail + "). Reply with guidance, resume it, or terminate it."})
	}
	return Step{Events: out}
}

// guidance is the record of a person's messages to a running session.
func guidance(texts []string) []Payload {
	out := make([]Payload, 0, len(texts))
	for _, text := range texts {
		out = append(out, &MessageAdded{Role: model.RoleUser, Content: text, Kind: KindUser})
	}
	return out
}

// boundary decides at an iteration boundary (a person's messages already
// recorded): a requested pause, then the stop conditions at time now, then
// the budgets against the most the next call can spend, then the next
// iteration with the warnings the model gets about its limits.
func (p policy) boundary(st *State, now time.Time, stop StopCondition, next CallEstimate, pauseNote string, pause bool) Step {
	if pause {
		return Step{Events: []Payload{&SessionPaused{Reason: ReasonUser, Detail: pauseNote}}}
	}
	d := stop.Check(st, now)
	if d.Action == Continue {
		d = budgets(st, next)
	}
	switch d.Action {
	case End:
		return Step{Next: endForLimit, Limit: d}
	case Pause:
		return Step{Events: []Payload{&SessionPaused{Reason: d.Reason, Detail: d.Detail}}}
	}
	n := st.CurrentIteration + 1
	out := []Payload{&IterationStarted{N: n}}
	// The warnings are about the iteration just started.
	out = append(out, p.limitWarnings(st, n)...)
	return Step{Events: out, Next: callModel}
}

// limitWarnings tells the model when this is its last call, or when a
// budget passes 80 % and 95 %.
func (p policy) limitWarnings(st *State, n int) []Payload {
	var out []Payload
	warn := func(key, text string) {
		if !st.LimitWarnings[key] {
			out = append(out, &MessageAdded{Role: model.RoleUser, Content: text, Kind: KindLimitWarning, Key: key})
		}
	}
	marker := ""
	if st.Mode == ModeSelfReasoning {
		marker = st.Marker
	}
	// A one-call session in tools mode answers in that call or in the
	// wrap-up; in self-reasoning mode only the marker ends it, so the
	// model hears about its last call even when it is the first.
	if n == st.MaxIterations && (st.MaxIterations > 1 || st.Mode == ModeSelfReasoning) {
		warn("last_iteration", p.texts.LastIteration(n, st.MaxIterations, marker))
	}
	budget := func(kind string, used, limit float64) {
		if limit <= 0 {
			return
		}
		pct := int(used * 100 / limit)
		switch {
		case pct >= 95:
			warn(kind+"_95", p.texts.BudgetWarning(kind, pct))
		case pct >= 80:
			warn(kind+"_80", p.texts.BudgetWarning(kind, pct))
		}
	}
	budget("token", float64(st.Usage.Total()), float64(st.Limits.BudgetTokens))
	budget("cost", st.CostUSD, st.Limits.BudgetUSD)
	return out
}

// planEnd ends a session whose model gave a final answer after failing
// its plan: the answer is kept as a partial one, and nothing verifies it.
// Nil while the plan has not failed.
func planEnd(st *State, answer string) []Payload {
	if !st.planFailed() {
		return nil
	}
	return sessionEnd(st, &SessionEnded{Status: StatusFailed, Reason: ReasonPlanFailed, Detail: "the model failed its plan: " + st.Plan.Reason, Answer: answer, Partial: true}, "")
}

// wrapUp decides whether a session a limit stops first makes one
// tool-less call for a best-effort answer, and returns the message asking
// for it (nil for none). Only when the limits allow it, the model was
// called at all, the session was not interrupted, the call was not made
// already (by this session before a crash), and the limit is not a budget
// — nor would the call, costing at most call, pass one.
func (p policy) wrapUp(st *State, d Decision, interrupted bool, call CallEstimate) *MessageAdded {
	if st.WrappedUp || !st.Limits.wrapUp() || st.InteractionCount == 0 || d.Reason == ReasonBudgetTokens || d.Reason == ReasonBudgetCost || interrupted ||
		budgets(st, call).Action != Continue {
		return nil
	}
	return &MessageAdded{Role: model.RoleUser, Content: p.texts.WrapUp(d.Reason), Kind: KindWrapUp}
}

// limitEnd is how a session a limit stopped ends: with the decision's
// status (failed unless the limit counts the work as done) and the best
// answer it has, as a partial one — the wrap-up reply when the wrap-up
// call answered now (reply non-nil), else the model's last answer; after
// a wrap-up in self-reasoning mode, the text after the completion marker.
func limitEnd(st *State, d Decision, reply *string) []Payload {
	status := d.Status
	if status == "" {
		status = StatusFailed
		if d.Reason == ReasonCompleted {
			status = StatusCompleted
		}
	}
	answer := st.LastAnswer()
	if reply != nil {
		answer = *reply
	}
	if a, ok := afterMarker(answer, st.Marker); ok && st.Mode == ModeSelfReasoning && st.WrappedUp {
		answer = a
	}
	return sessionEnd(st, &SessionEnded{Status: status, Reason: d.Reason, Detail: d.Detail, Answer: answer, Partial: answer != ""}, "")
}

// verified decides a final answer after its verification (outcome "" when
// the session has no verifier): it ends completed when the checks pass;
// otherwise the model hears what failed while iterations remain, and the
// session fails when none do.
func (p policy) verified(st *State, answer, outcome string) Step {
	if outcome == "" || outcome == VerifyPass {
		return Step{Events: sessionEnd(st, &SessionEnded{Status: StatusCompleted, Reason: ReasonCompleted, Answer: answer, AnswerJSON: answerJSON(st, answer)}, "")}
	}
	if st.CurrentIteration < st.MaxIterations {
		return Step{Events: []Payload{&MessageAdded{Role: model.RoleUser, Content: verificationFeedback(st.Verification.Checks), Kind: KindVerification}}}
	}
	return Step{Events: sessionEnd(st, &SessionEnded{Status: StatusFailed, Reason: ReasonVerificationFailed,
		Detail: "verification " + st.Verification.Outcome + " after the model's final answer", Answer: answer, Partial: true}, "")}
}
