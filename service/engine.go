package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/store"
)

// Engine drives sessions somewhere other than this process — a durable
// workflow engine's workers. With one configured, the service records
// each new session and hands it to the engine, passes people's controls
// on to it, and runs nothing itself; reading, listing and watching stay
// the same (the workers write the events to the same store).
type Engine interface {
	// Run starts driving a session already recorded in the store; a
	// session it already drives is left as it is, without error.
	Run(ctx context.Context, sessionID string) error
	// Control delivers a person's control (pause, resume, reply, decide,
	// terminate) to the session's driver.
	Control(ctx context.Context, sessionID string, ctl store.Control) error
}

// startOnEngine records a session (under a lease, released at once) and
// hands it to the engine.
func (s *Service) startOnEngine(ctx context.Context, id string, create func() error) (*Started, error) {
	if err := s.own(ctx, id); err != nil {
		return nil, err
	}
	err := create()
	s.disown(id)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Engine.Run(ctx, id); err != nil {
		return nil, fmt.Errorf("session %s is recorded but its workflow did not start: %v (resume it to try again)", id, err)
	}
	return &Started{ID: id}, nil
}

// controlOnEngine passes a control to the engine. A resume first makes
// sure the session's workflow runs (Run leaves a running one alone): a
// session whose workflow did not start, or ended, is driven again. Before
// that, a workspace restore a rewind still owes is made: a worker must
// never step a rewound session on over the files the rewind undid.
func (s *Service) controlOnEngine(ctx context.Context, ctl store.Control) (*Result, error) {
	if ctl.Kind == store.ControlResume {
		if err := s.settleRestore(ctx, ctl.SessionID); err != nil {
			return nil, err
		}
		if err := s.cfg.Engine.Run(ctx, ctl.SessionID); err != nil {
			return nil, fmt.Errorf("session %s's workflow could not be started: %v (is the engine reachable? try the resume again)", ctl.SessionID, err)
		}
	}
	if err := s.cfg.Engine.Control(ctx, ctl.SessionID, ctl); err != nil {
		return nil, fmt.Errorf("the %s did not reach session %s's workflow: %v", ctl.Kind, ctl.SessionID, err)
	}
	return &Result{ID: ctl.SessionID, Applied: true, Outcome: "sent to the session's workflow: it will " + string(ctl.Kind) + " it at the next safe point"}, nil
}

// settleRestore makes the workspace restore a rewind of session id owes,
// if any (see finishRestore), taking the session's lease for it as any
// process that settles one does.
func (s *Service) settleRestore(ctx context.Context, id string) error {
	cs := s.cfg.Checkpoints
	if cs == nil {
		return nil
	}
	p, err := cs.PendingRestore(id)
	if err != nil {
		return fmt.Errorf("session %s: could not read the restore its rewind may owe: %w", id, err)
	}
	if p == nil {
		return nil
	}
	if err := s.own(ctx, id); err != nil {
		if errors.Is(err, store.ErrLeaseHeld) {
			return conflict("session %s is held by another server, which restores the files its rewind owes first: try the resume again once it lets go", id)
		}
		return fmt.Errorf("session %s was not resumed, so that no step runs on files its rewind undid: %w (fix the cause and resume it again)", id, err)
	}
	s.disown(id)
	return nil
}
