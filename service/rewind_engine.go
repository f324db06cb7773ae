package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// WorkflowEngine is an Engine that can say whether a session's workflow
// is still open. A rewind on an engine needs it: the server records the
// rewind itself, so no worker may be stepping the session meanwhile.
type WorkflowEngine interface {
	Engine
	// Open reports whether the workflow of session sessionID is still
	// open (running steps, or waiting for a person's control); false when
	// it ended or never started.
	Open(ctx context.Context, sessionID string) (bool, error)
}

// engineIdle says why a rewind of session st, which a workflow engine
// runs, must wait, or nil when no worker can be stepping it: its
// workflow ended, or it waits, paused, for a control (which the resume
// after the rewind is).
func (s *Service) engineIdle(ctx context.Context, st *loop.State) error {
	we, ok := s.cfg.Engine.(WorkflowEngine)
	if !ok {
		return invalid("this server's workflow engine cannot say whether session %s's workflow has ended, so it cannot rewind it", st.ID)
	}
	open, err := we.Open(ctx, st.ID)
	if err != nil {
		return fmt.Errorf("rewind of session %s: could not ask the workflow engine about its workflow: %w (is the engine reachable? try again)", st.ID, err)
	}
	if open && st.Status != loop.StatusPaused {
		return conflict("session %s is %s but its workflow is still running: try again once the workflow has ended", st.ID, st.Status)
	}
	return nil
}

// rewindOnEngine records, restores and resumes a rewind of a session a
// workflow engine runs: the same commit the runner makes for a local
// session (session.rewound, the message, session.resumed when it
// resumes), appended by this process under the session's lease, in the
// same crash-safe order — restore note, commit, restore in place, note
// removed. Then a resume goes to the engine: a workflow that ended is
// started again, one waiting paused is woken, and a worker steps the
// session on from step req.At, its fold holding the rewind.
func (s *Service) rewindOnEngine(ctx context.Context, id string, ck *loop.WorkspaceCheckpointed, before *loop.State, req RewindRequest, out *Rewound) (*Rewound, error) {
	now, err := s.recordRewind(ctx, id, ck, before, req, out)
	if err != nil {
		return nil, err
	}
	if !loop.RewindResumes(now, req.Message) {
		return out, nil // recorded; it waits, paused
	}
	if _, err := s.controlOnEngine(ctx, store.Control{Kind: store.ControlResume, SessionID: id, Text: fmt.Sprintf("rewound to step %d", req.At)}); err != nil {
		return nil, fmt.Errorf("session %s is rewound to step %d and its files restored, but %w", id, req.At, err)
	}
	out.Resumed = true
	return out, nil
}

// recordRewind records and restores rewindOnEngine's rewind under the
// session's lease, and returns the state the rewind followed. The lease
// is let go before the engine is asked to resume: the worker that runs
// the session on needs none of this process's.
func (s *Service) recordRewind(ctx context.Context, id string, ck *loop.WorkspaceCheckpointed, before *loop.State, req RewindRequest, out *Rewound) (*loop.State, error) {
	if err := s.own(ctx, id); err != nil {
		if errors.Is(err, store.ErrLeaseHeld) {
			return nil, conflict("session %s is held by another process: try again when it lets go", id)
		}
		return nil, err
	}
	defer s.disown(id)
	events, now, err := s.rewindCommit(ctx, id, ck, before, req)
	if err != nil {
		return nil, err
	}
	if err := s.noteRestore(id, now.Seq+1, ck, now.Workspace); err != nil {
		return nil, err
	}
	// The commit point: appended under this process's lease, after every
	// event the worker recorded (the sequence numbers follow now's).
	if err := s.log.Append(ctx, events...); err != nil {
		// A note for a rewind not recorded is dropped (finishRestore).
		_ = s.finishRestore(context.WithoutCancel(ctx), id)
		return nil, fmt.Errorf("rewind of session %s to step %d was not recorded: %w", id, req.At, err)
	}
	if err := s.restoreRewound(ctx, id, ck, now.Workspace, req.At, out); err != nil {
		return nil, err
	}
	return now, nil
}

// rewindCommit reads session id again under its lease and returns the
// events a rewind appends to it — what loop.Runner.Rewind records — and
// the state they follow. The session must still be as the rewind was
// planned on (before), and its workflow idle.
func (s *Service) rewindCommit(ctx context.Context, id string, ck *loop.WorkspaceCheckpointed, before *loop.State, req RewindRequest) ([]loop.Event, *loop.State, error) {
	log, err := s.st.Load(ctx, id)
	if err != nil {
		return nil, nil, asServiceError(err)
	}
	now, err := loop.Fold(log)
	if err != nil {
		return nil, nil, err
	}
	// The log may have moved since it was read (a worker stepped it).
	if err := rewindRecheck(now, before, ck, req); err != nil {
		return nil, nil, err
	}
	if err := s.engineIdle(ctx, now); err != nil {
		return nil, nil, err
	}
	payloads := loop.RewindPayloads(now, loop.RewindTo{At: req.At, Checkpoint: ck.ID, CheckpointIteration: ck.Iteration, Message: req.Message})
	at := s.cfg.Clock()
	events := make([]loop.Event, len(payloads))
	for i, p := range payloads {
		events[i] = loop.NewEvent(id, now.Seq+int64(i)+1, at, p)
	}
	// The fold must take them, as it will on every reader: checked on a
	// copy folded from the same log before anything is written.
	check, _ := loop.Fold(log)
	for _, e := range events {
		if err := check.Apply(e); err != nil {
			return nil, nil, fmt.Errorf("rewind of session %s: %w", id, err)
		}
	}
	return events, now, nil
}
