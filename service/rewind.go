package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/internal/teststop"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// RewindRequest says where to take a session back to.
type RewindRequest struct {
	// At is the step whose end the session goes back to, from 1.
	At int
	// Message, when set, is a person's message the model reads after
	// step At's conversation; the session is resumed with it.
	Message string
	// DryRun only says what the rewind would do; nothing changes.
	DryRun bool
}

// Rewound is what a rewind did, or with DryRun would do.
type Rewound struct {
	ID string
	At int
	// Files is what restoring step At's checkpoint does to the workspace
	// as it is now.
	Files []checkpoint.Change
	// Steps are the steps set aside, in the order they ran.
	Steps []int
	// Resumed: the session runs again (here: Session).
	Resumed bool
	Session *loop.Session
}

// Rewind takes an ended or paused session back to the end of step
// req.At: its workspace files as the last checkpoint at or before that
// step holds them, and its conversation, plan, memory and counters as
// they were then; the steps after it stay in the log, set aside. A
// paused session, or one given a message, is resumed here.
//
// A session a workflow engine runs is rewound the same way once its
// workflow is idle, and resumed through the engine (rewind_engine.go).
//
// A crash never leaves it half done. Under the session's lease: a note
// that a restore is owed is written, then the rewind is recorded (the
// commit point), then the workspace is restored in place and the note
// removed. Whoever next takes the session's lease (a restarted server's
// recovery included) finds the note and finishes the restore when the
// log holds the rewind, or drops the note when it does not — the
// workspace was not touched before the commit.
func (s *Service) Rewind(ctx context.Context, c Caller, id string, req RewindRequest) (*Rewound, error) {
	if err := c.need(ScopeControl); err != nil {
		return nil, err
	}
	st, _, err := s.load(ctx, c, id)
	if err != nil {
		return nil, err
	}
	cs := s.cfg.Checkpoints
	if cs == nil {
		return nil, invalid("this process keeps no workspace checkpoints, so it cannot rewind sessions (start the server with checkpoints on)")
	}
	if req.At < 1 {
		return nil, invalid("rewind to step %d: steps are numbered from 1", req.At)
	}
	ck, err := rewindCheck(st, req.At)
	if err != nil {
		return nil, err
	}
	out := &Rewound{ID: id, At: req.At, Steps: st.StepsAfter(req.At), Files: []checkpoint.Change{}}
	if out.Steps == nil {
		out.Steps = []int{}
	}
	// Also checks, before anything is recorded, that the checkpoint is here.
	files, err := cs.Changes(ctx, id, ck.ID, st.Workspace)
	if err != nil {
		return nil, stepFilesError("rewind", id, req.At, err)
	}
	out.Files = append(out.Files, files...)
	if s.cfg.Engine != nil {
		// Workers run it: this process records the rewind once its
		// workflow is idle, and the engine runs it on (rewind_engine.go).
		if err := s.engineIdle(ctx, st); err != nil {
			return nil, err
		}
		if req.DryRun {
			return out, nil
		}
		return s.rewindOnEngine(ctx, id, ck, st, req, out)
	}
	if req.DryRun {
		return out, nil
	}
	if sess, ok := s.runner.Session(id); ok {
		// Its stop is recorded but it has not left the runner yet.
		moved, err := s.settle(ctx, sess, st.Seq)
		if err != nil {
			return nil, err
		}
		if moved {
			return nil, conflict("session %s is running again: pause it before rewinding", id)
		}
	}
	if err := s.own(ctx, id); err != nil {
		if errors.Is(err, store.ErrLeaseHeld) {
			return nil, conflict("session %s is run by another process: pause it there before rewinding", id)
		}
		return nil, err
	}
	workspace := st.Workspace
	sess, err := s.runner.Rewind(s.sessionContext(), id, loop.RewindTo{
		At: req.At, Checkpoint: ck.ID, CheckpointIteration: ck.Iteration, Message: req.Message,
		Before: func(ctx context.Context, now *loop.State) error {
			// The log may have moved since it was read above.
			if err := rewindRecheck(now, st, ck, req); err != nil {
				return err
			}
			return s.noteRestore(id, now.Seq+1, ck, workspace)
		},
		After: func(ctx context.Context, _ *loop.State) error {
			return s.restoreRewound(ctx, id, ck, workspace, req.At, out)
		},
	})
	if err != nil {
		// A note written for a rewind that was not recorded is dropped;
		// one that was recorded is finished now if it can be.
		_ = s.finishRestore(context.WithoutCancel(ctx), id)
		s.disown(id)
		return nil, rewindError(err)
	}
	if !loop.RewindResumes(st, req.Message) {
		s.disown(id) // recorded; it waits, paused
		return out, nil
	}
	// Resumed: it runs here (it may have stopped again already).
	out.Resumed, out.Session = true, sess
	s.keepWhileRunning(sess)
	return out, nil
}

// rewindCheck says why session st cannot be rewound to step at (a
// conflict while it runs or waits, else invalid), or returns the
// checkpoint the rewind restores.
func rewindCheck(st *loop.State, at int) (*loop.WorkspaceCheckpointed, error) {
	if err := loop.CheckRewind(st, at); err != nil {
		return nil, rewindError(err)
	}
	if st.Workspace == "" {
		return nil, invalid("session %s has no workspace, so it cannot be rewound", st.ID)
	}
	ck := st.CheckpointAt(at)
	if ck == nil {
		return nil, invalid("session %s has no workspace checkpoint at or before step %d (it ran with checkpoints off, or before they existed): it cannot be rewound there", st.ID, at)
	}
	return ck, nil
}

// rewindRecheck says why session now, read again under its lease, can
// no longer take the rewind planned on before: it cannot be rewound to
// req.At now, that would restore another checkpoint, or the rewind
// would now resume it (or not) where it would not have.
func rewindRecheck(now, before *loop.State, ck *loop.WorkspaceCheckpointed, req RewindRequest) error {
	again, err := rewindCheck(now, req.At)
	if err != nil {
		return err
	}
	if again.ID != ck.ID || loop.RewindResumes(now, req.Message) != loop.RewindResumes(before, req.Message) {
		return conflict("session %s changed while it was being rewound: try again", now.ID)
	}
	return nil
}

func rewindError(err error) error {
	switch {
	case errors.Is(err, loop.ErrNotStopped), errors.Is(err, loop.ErrRunning):
		return &Error{Kind: ErrConflict, Msg: err.Error(), Err: err}
	case errors.Is(err, loop.ErrNoSuchStep):
		return &Error{Kind: ErrInvalid, Msg: err.Error(), Err: err}
	}
	return asServiceError(err)
}

// stepFilesError is the error of a rewind or fork (verb) of session id
// at step at that could not read the step's checkpoint.
func stepFilesError(verb, id string, at int, err error) error {
	if errors.Is(err, checkpoint.ErrNotFound) {
		return invalid("session %s: the workspace of step %d is not on this machine: %v (its checkpoints are kept where it ran: %s it there)", id, at, err, verb)
	}
	return fmt.Errorf("%s of session %s at step %d: %w", verb, id, at, err)
}

// noteRestore notes, durably and before a rewind of session id to
// checkpoint ck is recorded as event seq, that the rewind owes a restore
// of workspace (see finishRestore).
func (s *Service) noteRestore(id string, seq int64, ck *loop.WorkspaceCheckpointed, workspace string) error {
	if err := s.cfg.Checkpoints.BeginRestore(id, checkpoint.Pending{Seq: seq, Checkpoint: ck.ID, Workspace: workspace}); err != nil {
		return err
	}
	teststop.At("rewind-before-commit")
	return nil
}

// restoreRewound restores workspace to checkpoint ck once the rewind of
// session id to step at is recorded, puts the files it changed in out,
// and removes the note noteRestore wrote. A restore that fails is owed
// still: whoever next takes the session's lease finishes it.
func (s *Service) restoreRewound(ctx context.Context, id string, ck *loop.WorkspaceCheckpointed, workspace string, at int, out *Rewound) error {
	teststop.At("rewind-after-commit")
	cs := s.cfg.Checkpoints
	files, err := cs.Restore(ctx, id, ck.ID, workspace)
	if err != nil {
		return fmt.Errorf("session %s: the rewind to step %d is recorded but its workspace %s was not restored: %w (it is restored when this server next takes the session's lease: when it restarts, or resumes, runs or rewinds the session)", id, at, workspace, err)
	}
	out.Files = append([]checkpoint.Change{}, files...)
	return cs.EndRestore(id)
}

// finishRestore completes, or drops, the workspace restore a rewind of
// session id owes (checkpoint.Pending): when the log holds the rewind the
// note names, the workspace is restored (again: restoring is
// idempotent); when it does not, the rewind was never recorded and the
// workspace never touched. The caller holds the session's lease; a
// session running here is left alone (its own rewind is under way).
func (s *Service) finishRestore(ctx context.Context, id string) error {
	cs := s.cfg.Checkpoints
	if cs == nil {
		return nil
	}
	if _, here := s.runner.Session(id); here {
		return nil
	}
	p, err := cs.PendingRestore(id)
	if p == nil || err != nil {
		return err
	}
	events, err := s.st.Load(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	recorded := false
	for _, e := range events {
		if e.Seq == p.Seq {
			_, recorded = e.Data.(*loop.SessionRewound)
		}
	}
	if recorded {
		if _, err := cs.Restore(ctx, id, p.Checkpoint, p.Workspace); err != nil {
			return fmt.Errorf("session %s was rewound but its workspace %s could not be restored: %w", id, p.Workspace, err)
		}
	}
	return cs.EndRestore(id)
}

// SettleRewinds finishes or drops every workspace restore a rewind
// owes whose session no live process owns (see finishRestore), and
// returns those sessions: a server runs it as it starts (Recover), so a
// rewind a crash cut short is settled even when nothing resumes the
// session.
func (s *Service) SettleRewinds(ctx context.Context, c Caller) ([]string, error) {
	if err := c.need(ScopeControl); err != nil {
		return nil, err
	}
	cs := s.cfg.Checkpoints
	if cs == nil {
		return nil, nil
	}
	ids, err := cs.PendingRestores()
	if err != nil {
		return nil, err
	}
	var settled []string
	var errs []error
	for _, id := range ids {
		if _, here := s.runner.Session(id); here {
			continue
		}
		if err := s.settleRewind(ctx, id); err != nil {
			if !errors.Is(err, store.ErrLeaseHeld) {
				errs = append(errs, err)
			}
			continue
		}
		settled = append(settled, id)
	}
	return settled, errors.Join(errs...)
}

// settleRewind finishes or drops the workspace restore a rewind of
// session id owes, if any, by taking the session's lease (own settles it:
// finishRestore) and giving it back. Another process holding the lease is
// ErrLeaseHeld: the restore is then that process's to make.
func (s *Service) settleRewind(ctx context.Context, id string) error {
	cs := s.cfg.Checkpoints
	if cs == nil {
		return nil
	}
	p, err := cs.PendingRestore(id)
	if err != nil {
		return fmt.Errorf("could not read the restore its rewind may owe: %w", err)
	}
	if p == nil {
		return nil
	}
	if err := s.own(ctx, id); err != nil {
		return err
	}
	s.disown(id)
	return nil
}
