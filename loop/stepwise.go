package loop

import (
	"context"
	"errors"
)

// Stepwise running: a driver outside this process's run loop — a durable
// workflow engine — runs a session one step at a time, each step an
// effect of its own (a model call, the tool calls, the bookkeeping
// between), rebuilt from the log and made durable before Step returns. A
// step retried after a crash continues from what the log holds: a model
// reply already recorded is not asked for again, and a tool call that may
// have half-run is re-run only if its tool is idempotent.

// StepKind is what a running session's next step does.
type StepKind string

const (
	// StepNone: the session is not running (ended, paused, waiting).
	StepNone StepKind = ""
	// StepModel calls the model for the open iteration.
	StepModel StepKind = "model"
	// StepTools runs the tool calls the model asked for.
	StepTools StepKind = "tools"
	// StepBookkeeping settles what comes between: closing an iteration, a
	// person's messages, controls, stop conditions, opening the next
	// iteration, a final answer's checks (verification and gates run here
	// too) — every such turn up to the next model call or tool calls.
	StepBookkeeping StepKind = "bookkeeping"
)

// NextStep says what Step does next for a session in state st.
func NextStep(st *State) StepKind {
	if st.Status != StatusRunning {
		return StepNone
	}
	switch phaseOf(st) {
	case phaseModel:
		return StepModel
	case phaseTools:
		return StepTools
	}
	return StepBookkeeping
}

// StepControls are a person's requests a stepwise driver holds until they
// take effect: Step applies them as the run loop would (a pause at the
// next boundary, guidance before the next model call, termination at once).
type StepControls struct {
	Pause     string // a pause note; pauses at the next iteration boundary
	Guidance  []string
	Terminate string
}

// Step takes one step of a running session from its log (see StepKind)
// and makes it durable, then returns the state after it. A session that
// is not running is returned as it is. A step that finds the session live
// in this runner fails with ErrRunning.
func (r *Runner) Step(ctx context.Context, id string, c StepControls) (*State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	events, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	st, err := Fold(events)
	if err != nil {
		return nil, err
	}
	if st.Status != StatusRunning && c.Terminate == "" {
		return st, nil
	}
	if st.Status.Finished() {
		return st, nil
	}
	s := r.newSession(id, st)
	s.spec, _ = events[0].Data.(*SessionStarted)
	if err := r.claim(s); err != nil {
		return nil, err
	}
	defer func() {
		r.release(s)
		s.markStopped()
	}()
	s.pauseReq, s.guidance = c.Pause, append([]string(nil), c.Guidance...)
	if c.Terminate != "" {
		s.termReq, s.terminate = c.Terminate, true
	}
	if st.Status != StatusRunning {
		// Terminating a paused or waiting session: nothing else to do.
		err := s.endTerminated(ctx)
		return s.state, err
	}
	if err := s.needEnv(ctx); err != nil {
		return nil, err
	}
	s.setStopConditions()
	callCtx, cancel := s.withSessionTimeout(ctx)
	defer cancel()
	defer s.releaseToolCalls()
	// Bookkeeping turns in a row (closing an iteration, then opening the
	// next) are one step: only a model call or the tool calls end it.
	for {
		kind := NextStep(s.state)
		if _, err := s.turn(ctx, callCtx); err != nil {
			return nil, err
		}
		if kind != StepBookkeeping || NextStep(s.state) != StepBookkeeping || ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The driver cancelled the step (a worker shutting down): what
		// the turn buffered is dropped, commits already handed over
		// finish first, and the step is taken again from the log.
		_ = s.waitPending()
		return nil, ctx.Err()
	}
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
	return s.state, nil
}

// RecordResume, RecordReply and RecordDecision record a person's control
// on a stopped session, as Resume, Reply and Decide do, without running it
// here: a stepwise driver takes the steps.
func (r *Runner) RecordResume(ctx context.Context, id, note string) (*State, error) {
	return r.recorded(r.record(ctx, id, resumeEvents(id, note), false))
}

// RecordReply: see RecordResume.
func (r *Runner) RecordReply(ctx context.Context, id, text string) (*State, error) {
	if text == "" {
		return nil, errors.New("loop: the reply is empty")
	}
	return r.recorded(r.record(ctx, id, replyEvents(ctx, id, text), false))
}

// RecordDecision: see RecordResume.
func (r *Runner) RecordDecision(ctx context.Context, id string, d ApprovalDecision) (*State, error) {
	return r.recorded(r.record(ctx, id, decisionEvents(id, d), false))
}

func (r *Runner) recorded(s *Session, err error) (*State, error) {
	if err != nil {
		return nil, err
	}
	return s.state, nil
}

// Create records a new session (durably) without running it: a stepwise
// driver takes its steps.
func (r *Runner) Create(ctx context.Context, task Task) (*State, error) {
	s, err := r.create(ctx, &task, startDurable)
	if err != nil {
		return nil, err
	}
	r.release(s)
	s.markStopped()
	return s.state, nil
}
