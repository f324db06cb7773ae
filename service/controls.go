package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// Result is what a control did.
type Result struct {
	ID string
	// Applied: the control took effect (or was handed to the session
	// running here, which honours it at its next safe point).
	Applied bool
	// Outcome says what happened, for people.
	Outcome string
	// Warning, when set, says what was left undone that the control did
	// not need (a private directory left behind), and what to do.
	Warning string
	// State is the session's state after the control, when it was applied
	// to a session that is not running (nil otherwise).
	State *loop.State
	// Session is the handle when the control made the session run here.
	Session *loop.Session
	// Request is the durable request stored for the process that runs the
	// session; WaitControl follows it.
	Request *store.Control
}

// Pause asks the session to pause at its next safe point (between
// iterations).
func (s *Service) Pause(ctx context.Context, c Caller, id, note string) (*Result, error) {
	return s.control(ctx, c, store.Control{SessionID: id, Kind: store.ControlPause, Text: note})
}

// Resume continues a paused or waiting session (or one a crash left
// running), in this process.
func (s *Service) Resume(ctx context.Context, c Caller, id, note string) (*Result, error) {
	return s.control(ctx, c, store.Control{SessionID: id, Kind: store.ControlResume, Text: note})
}

// Reply sends a person's message: the answer a waiting session waits
// for, guidance for a paused one, or the next message the model of a
// running one sees.
func (s *Service) Reply(ctx context.Context, c Caller, id, text string) (*Result, error) {
	if text == "" {
		return nil, invalid("the reply is empty")
	}
	return s.control(ctx, c, store.Control{SessionID: id, Kind: store.ControlReply, Text: text})
}

// Decide approves or denies a tool call waiting for approval.
func (s *Service) Decide(ctx context.Context, c Caller, id string, d loop.ApprovalDecision) (*Result, error) {
	switch {
	case d.Revoke && d.ArgsHash == "":
		return nil, invalid("revoking an allowance names the hash of the allowed arguments (see the session's allowed calls)")
	case !d.Revoke && (d.CallID == "" || d.ArgsHash == ""):
		return nil, invalid("a decision names the call and the hash of its arguments (see the pending approval)")
	}
	if d.EditedInput != nil && !json.Valid(d.EditedInput) {
		return nil, invalid("the edited arguments are not valid JSON")
	}
	b, _ := json.Marshal(d)
	return s.control(ctx, c, store.Control{SessionID: id, Kind: store.ControlDecide, Decision: b})
}

// Terminate ends the session: at once when it runs (in-flight calls are
// cancelled), by recording its end when it does not. Reason is free text
// or completed_by_user, failed, different_approach, stuck.
func (s *Service) Terminate(ctx context.Context, c Caller, id, reason string) (*Result, error) {
	return s.control(ctx, c, store.Control{SessionID: id, Kind: store.ControlTerminate, Text: reason})
}

// control applies ctl where it can: to the session running here, to a
// session no process runs (taking its lease), or, when another process
// runs it, by storing it for that process.
func (s *Service) control(ctx context.Context, c Caller, ctl store.Control) (*Result, error) {
	if err := c.need(ScopeControl); err != nil {
		return nil, err
	}
	st, _, err := s.load(ctx, c, ctl.SessionID)
	if err != nil {
		return nil, err
	}
	if st.Status.Finished() {
		return nil, conflict("session %s has ended (%s, %s): there is nothing to %s", st.ID, st.Status, st.Reason, ctl.Kind)
	}
	ctl.Subject = c.Subject
	if s.cfg.Engine != nil {
		return s.controlOnEngine(ctx, ctl)
	}
	if sess, ok := s.runner.Session(ctl.SessionID); ok {
		if st.Status != loop.StatusPaused && st.Status != loop.StatusWaiting {
			return s.applyLive(sess, ctl)
		}
		// Its stop is recorded (what the caller saw) but it has not left
		// the runner yet — or a control of this process is resuming it.
		moved, err := s.settle(ctx, sess, st.Seq)
		if err != nil {
			return nil, err
		}
		if moved {
			return s.control(ctx, c, ctl) // resumed meanwhile: look again
		}
	}
	err = s.own(ctx, ctl.SessionID)
	if errors.Is(err, store.ErrLeaseHeld) {
		req, err := s.st.RequestControl(ctx, ctl)
		if err != nil {
			return nil, err
		}
		return &Result{ID: ctl.SessionID, Outcome: fmt.Sprintf("another process runs session %s; it will %s it at the next safe point (request %d)", ctl.SessionID, ctl.Kind, req.ID), Request: &req}, nil
	}
	if err != nil {
		return nil, err
	}
	return s.applyOwned(ctx, ctl)
}

// applyLive hands a control to the session running here.
func (s *Service) applyLive(sess *loop.Session, ctl store.Control) (*Result, error) {
	res := &Result{ID: ctl.SessionID, Applied: true}
	switch ctl.Kind {
	case store.ControlPause:
		sess.Pause(ctl.Text)
		res.Outcome = "the session pauses after its current step"
	case store.ControlTerminate:
		sess.Terminate(ctl.Text)
		res.Outcome = "the session is terminated"
	case store.ControlReply:
		sess.Guide(ctl.Text)
		res.Outcome = "the model sees the message in its next step"
	case store.ControlResume:
		return nil, conflict("session %s is already running", ctl.SessionID)
	case store.ControlDecide:
		var d loop.ApprovalDecision
		if err := json.Unmarshal(ctl.Decision, &d); err == nil && d.Revoke {
			sess.Revoke(d.ArgsHash, d.Reason)
			res.Outcome = "the call asks again from the session's next step"
			return res, nil
		}
		return nil, conflict("session %s is running and waits for no approval", ctl.SessionID)
	default:
		return nil, invalid("unknown control %q", ctl.Kind)
	}
	return res, nil
}

// applyOwned applies a control to a session no process runs; the caller
// holds its lease, kept while the session runs here and given up after.
func (s *Service) applyOwned(ctx context.Context, ctl store.Control) (*Result, error) {
	id := ctl.SessionID
	res := &Result{ID: id, Applied: true}
	var sess *loop.Session
	var err error
	switch ctl.Kind {
	case store.ControlResume:
		sess, err = s.runner.Resume(s.sessionContext(), id, ctl.Text)
		res.Outcome = "resumed"
	case store.ControlReply:
		sess, err = s.runner.Reply(s.sessionContext(), id, ctl.Text)
		res.Outcome = "replied"
	case store.ControlDecide:
		var d loop.ApprovalDecision
		if err := json.Unmarshal(ctl.Decision, &d); err != nil {
			s.disown(id)
			return nil, invalid("the decision is not valid: %v", err)
		}
		sess, err = s.runner.Decide(s.sessionContext(), id, d)
		res.Outcome = "decided"
		if d.Revoke {
			res.Outcome = "revoked: the call asks again"
		}
	case store.ControlTerminate:
		res.State, err = s.runner.Terminate(ctx, id, ctl.Text)
		res.Outcome = "terminated"
		if err == nil {
			// Ended here without running: no process of it runs again.
			if perr := s.forgetPrivate(id, "terminated"); perr != nil {
				res.Warning = perr.Error()
			}
		}
	case store.ControlPause:
		err = conflict("session %s is not running here or anywhere else: there is nothing to pause", id)
	default:
		err = invalid("unknown control %q", ctl.Kind)
	}
	if err != nil {
		s.disown(id)
		return nil, asServiceError(err)
	}
	if sess != nil {
		select {
		case <-sess.Done(): // recorded, nothing to run (more approvals pending)
			res.State, _ = sess.Wait(ctx)
			s.disown(id)
		default:
			res.Session = sess
			s.keepWhileRunning(sess)
		}
	} else {
		s.disown(id)
	}
	return res, nil
}

// asServiceError types an error from the runner: refusals about the
// session's state are conflicts, unknown sessions not found.
func asServiceError(err error) error {
	var se *Error
	switch {
	case errors.As(err, &se):
		return err
	case errors.Is(err, loop.ErrNotFound):
		return &Error{Kind: ErrNotFound, Msg: err.Error(), Err: err}
	case errors.Is(err, loop.ErrNoModel), errors.Is(err, store.ErrClosed), errors.Is(err, context.Canceled):
		return err
	}
	return &Error{Kind: ErrConflict, Msg: err.Error(), Err: err}
}

// WaitControl waits until a stored control request is honoured and returns
// it with its outcome. When the process that ran the session stops first
// (its lease expires or is given up), the request is applied here.
func (s *Service) WaitControl(ctx context.Context, c Caller, reqID int64) (store.Control, *Result, error) {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		ctl, err := s.st.Control(ctx, reqID)
		if err != nil {
			return store.Control{}, nil, err
		}
		if ctl.Done {
			return ctl, nil, nil
		}
		if _, here := s.runner.Session(ctl.SessionID); !here {
			if done, res, took, err := s.applyOrphan(ctx, ctl, "applied by the requesting process after the owner stopped"); took {
				return done, res, err
			}
		}
		select {
		case <-ctx.Done():
			return ctl, nil, ctx.Err()
		case <-t.C:
		}
	}
}

// applyOrphan applies a stored request whose session no process runs —
// the owner let it go (it paused or stopped, or the process died) before
// honouring it — by taking the session's lease; took reports whether it
// could (false: another process runs the session and takes the request).
func (s *Service) applyOrphan(ctx context.Context, ctl store.Control, outcome string) (done store.Control, res *Result, took bool, err error) {
	if s.own(ctx, ctl.SessionID) != nil {
		return ctl, nil, false, nil
	}
	// The owner may have honoured it just before it let go.
	if again, err := s.st.Control(ctx, ctl.ID); err != nil || again.Done {
		s.disown(ctl.SessionID)
		return again, nil, true, err
	}
	res, err = s.applyOwned(ctx, ctl)
	if err != nil {
		outcome = "refused: " + err.Error()
	}
	_ = s.st.CompleteControl(context.WithoutCancel(ctx), ctl.ID, outcome)
	ctl.Done, ctl.Outcome = true, outcome
	return ctl, res, true, err
}

// pollControls honours the controls other processes stored for sessions
// running here and, with Config.TakeOverControls, those whose owner let
// their session go first (applyOrphan).
func (s *Service) pollControls(ctx context.Context) {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pending, err := s.st.ControlsAfter(ctx, 0)
		if err != nil {
			continue // the store is busy or closing: try again next tick
		}
		for _, ctl := range pending {
			sess, ok := s.runner.Session(ctl.SessionID)
			if !ok {
				// Its owner takes it — unless it let the session go (it
				// paused or stopped) after the request was stored: then a
				// process that takes over controls applies it, owning the
				// session first.
				if s.cfg.TakeOverControls && s.cfg.Engine == nil {
					s.applyOrphan(ctx, ctl, "applied by another process after the owner let the session go")
				}
				continue
			}
			outcome := "refused"
			if res, err := s.applyLive(sess, ctl); err != nil {
				outcome = "refused: " + err.Error()
			} else {
				outcome = res.Outcome
			}
			_ = s.st.CompleteControl(ctx, ctl.ID, outcome)
		}
	}
}

// honourPendingTermination ends a session a person asked to terminate
// while no process ran it; it reports whether it did.
func (s *Service) honourPendingTermination(ctx context.Context, id string) (bool, error) {
	pending, err := s.st.PendingControls(ctx, id)
	if err != nil {
		return false, err
	}
	for _, ctl := range pending {
		if ctl.Kind != store.ControlTerminate {
			continue
		}
		if _, err := s.runner.Terminate(ctx, id, ctl.Text); err != nil {
			return false, err
		}
		return true, s.st.CompleteControl(ctx, ctl.ID, "terminated when the session was recovered")
	}
	return false, nil
}
