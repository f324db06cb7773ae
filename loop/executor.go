package loop

import "context"

// The executor is the session's run loop (step.go): it performs effects —
// model calls, tool runs, gate checks, verification — and it is the only
// code that commits. What must be durable before an effect starts is
// decided here and nowhere else:
//
//  1. Nothing that must not run twice (a tool that does not declare
//     itself idempotent, a gate, the verifier's commands) starts before
//     every earlier event — the model reply that asked for it included —
//     is durable: after a crash it is never silently run again, and a
//     reply it depended on is never asked for again.
//  2. Everything else — the next model call, an idempotent tool — starts
//     while what came before commits behind it (AsyncLog), so the
//     session's critical path carries no commit wait. A crash in that
//     window loses at most the events of one commit, as a crash between
//     a reply and its commit always could; what runs again is only what
//     may run twice.
//
// The other commit point is the run loop itself: when the session stops
// running here (ended, paused, waiting), everything is made durable.
type effect int

const (
	// effectModelCall is a model call, the wrap-up call included.
	effectModelCall effect = iota
	// effectIdempotentTool is a tool that may safely run twice.
	effectIdempotentTool
	// effectTool is a tool that must not run twice.
	effectTool
	// effectCheck is a gate's verdict or a verification run.
	effectCheck
)

// commitFor makes durable what effect e needs durable before it starts.
func (s *Session) commitFor(ctx context.Context, e effect) error {
	switch e {
	case effectModelCall:
		// Earlier events commit while the effect runs: a tool's result
		// never waits behind the model.
		return s.flushBehind(ctx, false)
	case effectIdempotentTool:
		// Tools are mostly quick: the events wait for the next model
		// call's commit, or commitGrace if the tool takes longer.
		return s.flushBehind(ctx, true)
	}
	return s.flush(ctx) // rule 1
}

// closeIteration records the end of the open iteration, if any.
func (s *Session) closeIteration(status IterationStatus, errText, answer string) {
	s.record(iterationEnd(s.state, status, errText, answer))
}

// endSession records the end of the session (see sessionEnd).
func (s *Session) endSession(e *SessionEnded, iterationError string) {
	s.record(sessionEnd(s.state, e, iterationError))
}

// policy is the session's decision rules.
func (s *Session) policy() policy {
	p := policy{texts: s.r.cfg.Texts}
	if s.env != nil {
		p.hasGate, p.tools, p.approval = s.env.Gate != nil, s.env.Tools, s.env.Approval
	}
	return p
}

// record applies and buffers a decision's events.
func (s *Session) record(events []Payload) {
	for _, p := range events {
		s.emit(p)
	}
}

// perform records a decision's events and performs its effect.
func (s *Session) perform(ctx context.Context, st Step) error {
	s.record(st.Events)
	switch st.Next {
	case settleAnswer:
		return s.settle(ctx, st.Answer, false)
	case endForLimit:
		return s.endByLimit(ctx, st.Limit)
	case lookForStuck:
		return s.perform(ctx, s.policy().stuck(s.state))
	}
	// callModel: the run loop makes the call (the iteration is open);
	// runTool and rerunTool come only from toolCall, which runCalls
	// performs.
	return nil
}
