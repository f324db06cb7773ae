package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/internal/teststop"
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
	// ID is the new session's ID; empty: a new random one.
	ID string
	// Prepare, when set, runs on the fork's workspace once its files are
	// written and before the fork is recorded (a server running as root
	// gives it to the user sandboxed commands run as).
	Prepare func(workspace string) error
}

// Fork starts a new session whose log is a copy of session id's up to
// the end of live step req.At (its session.started names forked_from) and
// whose workspace is a new directory holding the files of the last
// checkpoint at or before that step; then it runs it here. The original
// is not changed.
//
// All or nothing, a crash included: a note is written first (see
// fork_note.go), then the new session's shadow repository and workspace,
// then the copy is appended in one commit under the new session's lease —
// the commit point — and the note removed. A fork that fails before the
// commit removes its files at once; one a killed process left is removed
// by the next recovery pass (Recover), so no workspace or checkpoint
// directory is left without a session, and no session without its files.
func (s *Service) Fork(ctx context.Context, c Caller, id string, req ForkRequest) (*Started, error) {
	if err := c.need(ScopeWrite); err != nil {
		return nil, err
	}
	if s.cfg.Checkpoints == nil {
		return nil, invalid("this process keeps no workspace checkpoints, so it cannot fork sessions (start it with checkpoints on)")
	}
	// Forks an earlier process left half made are settled first (a CLI
	// runs no recovery pass of its own).
	_ = s.finishForks(ctx)
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
	newID := req.ID
	if newID == "" {
		newID = s.cfg.Runner.NewID()
	} else if _, err := s.st.Load(ctx, newID); !errors.Is(err, store.ErrNotFound) {
		if err != nil {
			return nil, err
		}
		return nil, conflict("session %s already exists: a fork needs a new ID", newID)
	}
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

	// From the note on, every way out either records the fork or removes
	// its files and the note; a kill leaves the note to Recover.
	if err := s.beginFork(forkNote{ID: newID, From: id, Workspace: dir, Owner: s.cfg.Owner, Time: s.cfg.Clock()}); err != nil {
		return nil, err
	}
	undo := func() {
		if s.removeForkFiles(forkNote{ID: newID, Workspace: dir}) == nil {
			s.endFork(newID)
		}
	}
	if err := s.cfg.Checkpoints.Fork(ctx, id, newID, ck.ID); err != nil {
		undo()
		return nil, stepFilesError("fork", id, req.At, err)
	}
	if err := s.cfg.Checkpoints.Export(ctx, newID, ck.ID, dir); err != nil {
		undo()
		return nil, stepFilesError("fork", id, req.At, err)
	}
	if req.Prepare != nil {
		if err := req.Prepare(dir); err != nil {
			undo()
			return nil, fmt.Errorf("fork of session %s: preparing its workspace %s: %w", id, dir, err)
		}
	}
	teststop.At("fork-before-commit")
	if s.cfg.Engine != nil {
		started, err := s.startOnEngine(ctx, newID, func() error { return s.log.Append(ctx, copied...) })
		if err != nil && started == nil && !s.recorded(ctx, newID) {
			undo()
		} else {
			s.endFork(newID)
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
		if !s.recorded(ctx, newID) {
			undo()
		}
		return nil, fmt.Errorf("fork of session %s: the new session was not saved: %w", id, err)
	}
	teststop.At("fork-after-commit")
	s.endFork(newID)
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

// recorded reports whether session id is in the store, or may be (the
// store cannot say now): its files are kept and its note too, for the
// next recovery pass to settle.
func (s *Service) recorded(ctx context.Context, id string) bool {
	_, err := s.st.Load(context.WithoutCancel(ctx), id)
	return !errors.Is(err, store.ErrNotFound)
}

// forkPoint returns how many of events a fork at step at copies — up to
// live step at's end and the checkpoint taken right after it (steps a
// rewind set aside are not live) — and the checkpoint the fork's
// workspace is made from: the last live one at or before that step.
func forkPoint(id string, events []loop.Event, at int) (int, *loop.WorkspaceCheckpointed, error) {
	if at < 1 {
		return 0, nil, invalid("fork at step %d: steps are numbered from 1", at)
	}
	end, ok := loop.LiveStepEnd(events, at)
	if !ok {
		st, _ := loop.Fold(events)
		steps := []int(nil)
		if st != nil {
			steps = st.RewindableSteps()
		}
		return 0, nil, invalid("session %s has no finished step %d to fork at (its finished steps: %s)", id, at, stepList(steps))
	}
	st, err := loop.Fold(events[:end])
	if err != nil {
		return 0, nil, err
	}
	ck := st.CheckpointAt(at)
	if ck == nil {
		return 0, nil, invalid("session %s has no workspace checkpoint at or before step %d (it ran with checkpoints off, or before they existed): it cannot be forked there", id, at)
	}
	return end, ck, nil
}

// stepList says steps briefly: "none", "1-5" or "1-3, 5".
func stepList(steps []int) string {
	if len(steps) == 0 {
		return "none"
	}
	var parts []string
	for i := 0; i < len(steps); {
		j := i
		for j+1 < len(steps) && steps[j+1] == steps[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(steps[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", steps[i], steps[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
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
