package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/store"
)

// ForkRequest says where to fork a session and how the fork differs.
type ForkRequest struct {
	// At is the step (iteration) whose end the fork starts from, from 1.
	At int
	// Model, when set, is the model the fork runs with from there
	// (recorded as model.switched), else the original's.
	Model string
	// Message, when set, is a person's message the fork's next model
	// call reads after step At's conversation.
	Message string
	// Workspace is the fork's workspace directory, which must not exist;
	// empty: beside the original's, named after the fork.
	Workspace string
}

// Fork starts a new session whose log is a copy of session id's up to
// the end of step req.At (its session.started names forked_from) and
// whose workspace is a new directory holding the files of the last
// checkpoint at or before that step; then it runs it here. The original
// is not changed. The copy is appended in one commit under the new
// session's lease, all or nothing; when the workspace cannot be written,
// no session is created, and when the copy cannot be saved, the
// workspace written for it is removed.
func (s *Service) Fork(ctx context.Context, c Caller, id string, req ForkRequest) (*Started, error) {
	if err := c.need(ScopeWrite); err != nil {
		return nil, err
	}
	if s.cfg.Checkpoints == nil {
		return nil, invalid("this process keeps no workspace checkpoints, so it cannot fork sessions")
	}
	events, err := s.st.Load(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound("session %s not found (list them with agentloop sessions list)", id)
	}
	if err != nil {
		return nil, err
	}
	started, _ := events[0].Data.(*loop.SessionStarted)
	if started == nil || !c.sees(started.Tenant) {
		return nil, notFound("session %s not found (list them with agentloop sessions list)", id)
	}
	upTo, ck, err := forkPoint(id, events, req.At)
	if err != nil {
		return nil, err
	}
	newID := s.cfg.Runner.NewID()
	dir := req.Workspace
	if dir == "" {
		if started.Workspace == "" {
			return nil, invalid("session %s has no workspace: name the fork's directory", id)
		}
		dir = filepath.Join(filepath.Dir(started.Workspace), filepath.Base(started.Workspace)+"-fork-"+newID)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, invalid("fork directory: %v", err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil, conflict("%s already exists: the fork needs a new directory", dir)
	}
	copied := forkEvents(events[:upTo], newID, dir, c.Tenant, &loop.ForkedFrom{ID: id, Iteration: req.At}, req, s.cfg.Clock)

	if err := s.cfg.Checkpoints.Fork(ctx, id, newID, ck.ID); err != nil {
		return nil, forkCheckpointError(id, req.At, err)
	}
	if err := s.cfg.Checkpoints.Export(ctx, newID, ck.ID, dir); err != nil {
		_ = s.cfg.Checkpoints.Remove(newID)
		return nil, forkCheckpointError(id, req.At, err)
	}
	undo := func() {
		_ = os.RemoveAll(dir)
		_ = s.cfg.Checkpoints.Remove(newID)
	}
	if s.cfg.Engine != nil {
		started, err := s.startOnEngine(ctx, newID, func() error { return s.log.Append(ctx, copied...) })
		if err != nil && started == nil {
			undo()
		}
		return started, err
	}
	if !s.log.startTaking(newID, s.cfg.Owner, s.cfg.LeaseTTL) {
		if err := s.own(ctx, newID); err != nil {
			undo()
			return nil, err
		}
	}
	if err := s.log.Append(ctx, copied...); err != nil {
		s.log.stopTaking(newID)
		s.disown(newID)
		undo()
		return nil, fmt.Errorf("fork of session %s: the new session was not saved: %w", id, err)
	}
	sess, err := s.runner.Resume(s.sessionContext(), newID, "")
	if err != nil {
		// Recorded but not running here: it is resumable like any
		// stopped session.
		s.disown(newID)
		return nil, asServiceError(err)
	}
	s.keepWhileRunning(sess)
	return &Started{ID: newID, Session: sess}, nil
}

func forkCheckpointError(id string, at int, err error) error {
	if errors.Is(err, checkpoint.ErrNotFound) {
		return invalid("session %s: the workspace of step %d is not on this machine: %v", id, at, err)
	}
	return fmt.Errorf("fork of session %s at step %d: %w", id, at, err)
}

// forkPoint returns how many of events a fork at step at copies — up to
// iteration at's end and the checkpoint taken right after it — and the
// last checkpoint among them.
func forkPoint(id string, events []loop.Event, at int) (int, *loop.WorkspaceCheckpointed, error) {
	if at < 1 {
		return 0, nil, invalid("fork at step %d: steps are numbered from 1", at)
	}
	end, last := -1, 0
	for i, e := range events {
		if d, ok := e.Data.(*loop.IterationEnded); ok {
			last = d.N
			if d.N == at {
				end = i + 1
				break
			}
		}
	}
	if end < 0 {
		return 0, nil, invalid("session %s has no finished step %d (its last finished step is %d)", id, at, last)
	}
	for end < len(events) {
		if d, ok := events[end].Data.(*loop.WorkspaceCheckpointed); ok && d.Iteration == at {
			end++
			continue
		}
		break
	}
	var ck *loop.WorkspaceCheckpointed
	for _, e := range events[:end] {
		if d, ok := e.Data.(*loop.WorkspaceCheckpointed); ok {
			ck = d
		}
	}
	if ck == nil {
		return 0, nil, invalid("session %s has no workspace checkpoint at or before step %d (it ran with checkpoints off, or before they existed): it cannot be forked there", id, at)
	}
	return end, ck, nil
}

// forkEvents copies events into session newID: session.started names
// where it came from, its new workspace and tenant, and the fork's time;
// a new model and a person's message follow the copy.
func forkEvents(events []loop.Event, newID, dir, tenant string, from *loop.ForkedFrom, req ForkRequest, clock func() time.Time) []loop.Event {
	out := make([]loop.Event, 0, len(events)+2)
	now := clock()
	for _, e := range events {
		e.SessionID = newID
		if st, ok := e.Data.(*loop.SessionStarted); ok {
			cp := *st
			cp.ForkedFrom, cp.Workspace, cp.Tenant = from, dir, tenant
			e.Data = &cp
			// The fork was created now: lists sort it so, and its
			// session timeout counts from now. The copied steps keep
			// the times they happened at.
			e.Time = now
		}
		out = append(out, e)
	}
	seq := events[len(events)-1].Seq
	add := func(p loop.Payload) {
		seq++
		out = append(out, loop.NewEvent(newID, seq, now, p))
	}
	if req.Model != "" {
		st, _ := loop.Fold(events)
		cur := ""
		if st != nil {
			cur = st.CurrentModel
		}
		add(&loop.ModelSwitched{Iteration: req.At, From: cur, To: req.Model, Why: fmt.Sprintf("forked from session %s at step %d with another model", from.ID, from.Iteration)})
	}
	if req.Message != "" {
		add(&loop.MessageAdded{Role: model.RoleUser, Content: req.Message, Kind: loop.KindUser})
	}
	return out
}
