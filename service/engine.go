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
// any control that lets a worker step the session on (all but a pause and
// a terminate), a workspace restore a rewind still owes is made: no step
// may run over the files the rewind undid.
func (s *Service) controlOnEngine(ctx context.Context, ctl store.Control) (*Result, error) {
	if ctl.Kind != store.ControlPause && ctl.Kind != store.ControlTerminate {
		if err := s.settleRewind(ctx, ctl.SessionID); err != nil {
			if errors.Is(err, store.ErrLeaseHeld) {
				return nil, conflict("session %s is held by another server, which restores the files its rewind owes first: send the %s again once it lets go", ctl.SessionID, ctl.Kind)
			}
			return nil, fmt.Errorf("session %s: the %s was not sent, so that no step runs on files its rewind undid: %w (the restore needs this server's checkpoint of the session and its workspace: fix what failed and send the %s again)", ctl.SessionID, ctl.Kind, err, ctl.Kind)
		}
	}
	if ctl.Kind == store.ControlResume {
		if err := s.cfg.Engine.Run(ctx, ctl.SessionID); err != nil {
			return nil, fmt.Errorf("session %s's workflow could not be started: %v (is the engine reachable? try the resume again)", ctl.SessionID, err)
		}
	}
	if err := s.cfg.Engine.Control(ctx, ctl.SessionID, ctl); err != nil {
		return nil, fmt.Errorf("the %s did not reach session %s's workflow: %v", ctl.Kind, ctl.SessionID, err)
	}
	return &Result{ID: ctl.SessionID, Applied: true, Outcome: "sent to the session's workflow: it will " + string(ctl.Kind) + " it at the next safe point"}, nil
}
