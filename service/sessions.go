package service

import (
	"context"
	"errors"
	"iter"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// Started is a session the service started or resumed in this process.
type Started struct {
	ID string
	// Session is the handle of the session running here (Wait, Done).
	Session *loop.Session
}

// Start records a new session for the caller's tenant and runs it here.
func (s *Service) Start(ctx context.Context, c Caller, task loop.Task) (*Started, error) {
	if err := c.need(ScopeWrite); err != nil {
		return nil, err
	}
	if task.Prompt == "" && len(task.Messages) == 0 {
		return nil, invalid("the task is empty: give a prompt or messages")
	}
	task.Tenant = c.Tenant
	if task.ID == "" {
		task.ID, task.FreshID = s.cfg.Runner.NewID(), true
	}
	if s.cfg.Engine != nil {
		started, err := s.startOnEngine(ctx, task.ID, func() error {
			if _, err := s.runner.Create(ctx, task); err != nil && !errors.Is(err, loop.ErrSeqConflict) {
				if errors.Is(err, loop.ErrNotSaved) {
					return err // the store's fault, not the task's
				}
				return invalid("%v", err)
			} else if err != nil {
				return err
			}
			return nil
		})
		if errors.Is(err, store.ErrLeaseHeld) || errors.Is(err, loop.ErrSeqConflict) {
			return nil, conflict("session %s already exists", task.ID)
		}
		return started, err
	}
	// The lease is taken by the commit that records session.started when
	// the store can do both at once (one commit fewer per session), else
	// first.
	if _, here := s.runner.Session(task.ID); !here {
		if err := s.letGo(ctx, task.ID); err != nil {
			return nil, err
		}
	}
	if !s.log.startTaking(task.ID, s.cfg.Owner, s.cfg.LeaseTTL) {
		if err := s.own(ctx, task.ID); err != nil {
			if errors.Is(err, store.ErrLeaseHeld) {
				return nil, conflict("session %s already exists and runs elsewhere", task.ID)
			}
			return nil, err
		}
	}
	sess, err := s.runner.Start(s.sessionContext(), task)
	if err != nil {
		s.log.stopTaking(task.ID)
		s.disown(task.ID)
		if errors.Is(err, store.ErrLeaseHeld) {
			return nil, conflict("session %s already exists and runs elsewhere", task.ID)
		}
		if errors.Is(err, loop.ErrSeqConflict) {
			return nil, conflict("session %s already exists", task.ID)
		}
		if errors.Is(err, loop.ErrNotSaved) {
			return nil, err // the store's fault, not the task's
		}
		return nil, invalid("%v", err)
	}
	s.keepWhileRunning(sess)
	return &Started{ID: sess.ID(), Session: sess}, nil
}

// Get returns a session's state. A session of another tenant is not found.
func (s *Service) Get(ctx context.Context, c Caller, id string) (*loop.State, error) {
	if err := c.need(ScopeRead); err != nil {
		return nil, err
	}
	st, _, err := s.load(ctx, c, id)
	return st, err
}

// Events returns the caller's view of a session's log after seq after:
// the stored events, then new ones as they are committed.
func (s *Service) Events(ctx context.Context, c Caller, id string, after int64) (iter.Seq2[loop.Event, error], error) {
	if err := c.need(ScopeRead); err != nil {
		return nil, err
	}
	if _, _, err := s.load(ctx, c, id); err != nil {
		return nil, err
	}
	return s.feed.Events(ctx, id, after), nil
}

// List returns the caller's tenant's sessions (every tenant's with the
// all-tenants scope), newest first.
func (s *Service) List(ctx context.Context, c Caller, f store.Filter) ([]loop.Summary, error) {
	if err := c.need(ScopeRead); err != nil {
		return nil, err
	}
	if !c.has(ScopeAllTenants) {
		f.Tenant = c.Tenant
	}
	if f.Limit < 0 || f.Offset < 0 {
		return nil, invalid("limit and offset cannot be negative")
	}
	return s.st.List(ctx, f)
}

// Delete removes a session that no process runs. A session whose end is
// recorded but that has not yet stopped running here is waited for (see
// settle): a session a client sees as ended can be deleted.
func (s *Service) Delete(ctx context.Context, c Caller, id string) error {
	if err := c.need(ScopeWrite); err != nil {
		return err
	}
	st, _, err := s.load(ctx, c, id)
	if err != nil {
		return err
	}
	if sess, running := s.runner.Session(id); running {
		if !st.Status.Finished() {
			return conflict("session %s is running here: terminate it first", id)
		}
		if _, err := s.settle(ctx, sess, st.Seq); err != nil {
			return err
		}
	}
	if st.Status.Finished() {
		// Nobody runs an ended session: no lease needed.
		return s.deleted(id, s.st.Delete(ctx, id))
	}
	if err := s.own(ctx, id); err != nil {
		if errors.Is(err, store.ErrLeaseHeld) {
			return conflict("session %s is running in another process: terminate it first", id)
		}
		return err
	}
	err = s.st.Delete(ctx, id)
	s.disown(id)
	return s.deleted(id, err)
}

// deleted reports the store's delete of session id; once its row is gone,
// and only then, its checkpoints are released.
func (s *Service) deleted(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound("session %s not found", id)
	}
	if err != nil {
		return err
	}
	err = s.releaseCheckpoints(id)
	if perr := s.forgetPrivate(id, "deleted"); perr != nil {
		err = errors.Join(err, perr)
	}
	return err
}

// load folds a session the caller may see.
func (s *Service) load(ctx context.Context, c Caller, id string) (*loop.State, *loop.SessionStarted, error) {
	if id == "" {
		return nil, nil, invalid("no session ID given")
	}
	events, err := s.st.Load(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, notFound("session %s not found (list them with agentloop sessions list)", id)
	}
	if err != nil {
		return nil, nil, err
	}
	started, _ := events[0].Data.(*loop.SessionStarted)
	if started == nil || !c.sees(started.Tenant) {
		return nil, nil, notFound("session %s not found (list them with agentloop sessions list)", id)
	}
	st, err := loop.Fold(events)
	if err != nil {
		return nil, nil, err
	}
	return st, started, nil
}

// Recover resumes here every session a stopped process left running whose
// lease expired (or that never had one); sessions another live process
// owns are left to it. Terminations requested while nobody ran the
// session are honoured instead of resuming it.
func (s *Service) Recover(ctx context.Context, c Caller) ([]*Started, error) {
	if err := c.need(ScopeControl); err != nil {
		return nil, err
	}
	// Forks a crash cut short are recorded or removed (fork_note.go), and
	// rewinds settled, whether or not their sessions run again (here or
	// on an engine); one that cannot be does not hold up the rest.
	forkErr := s.finishForks(ctx)
	_, settleErr := s.SettleRewinds(ctx, c)
	restoreErr := errors.Join(settleErr, forkErr)
	if s.cfg.Engine != nil {
		return nil, restoreErr // the engine keeps its sessions going
	}
	list, err := s.List(ctx, c, store.Filter{Status: []loop.Status{loop.StatusRunning}})
	if err != nil {
		return nil, err
	}
	// Only sessions without a live lease are tried: several servers run
	// this every few seconds, and a lease read is cheaper than a claim.
	var ids []string
	for _, sum := range list {
		if _, here := s.runner.Session(sum.ID); !here {
			ids = append(ids, sum.ID)
		}
	}
	if len(ids) == 0 {
		return nil, restoreErr
	}
	leases, err := s.st.LeasesOf(ctx, ids...)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock()
	var out []*Started
	for _, sum := range list {
		if _, here := s.runner.Session(sum.ID); here {
			continue
		}
		if le, held := leases[sum.ID]; held && le.Owner != s.cfg.Owner && le.Expires.After(now) && !processGone(le.Owner) {
			continue // a live process runs it
		}
		if err := s.own(ctx, sum.ID); err != nil {
			if errors.Is(err, store.ErrLeaseHeld) {
				continue // a live process runs it
			}
			return out, err
		}
		if done, err := s.honourPendingTermination(ctx, sum.ID); err != nil || done {
			s.disown(sum.ID)
			if err != nil {
				return out, err
			}
			continue
		}
		sess, err := s.runner.Recover(s.sessionContext(), sum.ID)
		if errors.Is(err, loop.ErrNotLeftRunning) {
			s.disown(sum.ID) // it stopped since the list was read
			continue
		}
		if err != nil {
			s.disown(sum.ID)
			return out, err
		}
		s.keepWhileRunning(sess)
		out = append(out, &Started{ID: sum.ID, Session: sess})
	}
	return out, restoreErr
}

// Abandoned lists the sessions left running that no live process owns:
// their lease expired, its owner died, or they never had one.
func (s *Service) Abandoned(ctx context.Context, c Caller) ([]loop.Summary, error) {
	list, err := s.List(ctx, c, store.Filter{Status: []loop.Status{loop.StatusRunning}})
	if err != nil || len(list) == 0 {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, sum := range list {
		ids[i] = sum.ID
	}
	leases, err := s.st.LeasesOf(ctx, ids...)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock()
	out := list[:0]
	for _, sum := range list {
		le, held := leases[sum.ID]
		if held && le.Expires.After(now) && !processGone(le.Owner) {
			continue
		}
		out = append(out, sum)
	}
	return out, nil
}

// EventsPage returns at most limit events of a session after seq after
// (all of them when limit is 0).
func (s *Service) EventsPage(ctx context.Context, c Caller, id string, after int64, limit int) ([]loop.Event, error) {
	if err := c.need(ScopeRead); err != nil {
		return nil, err
	}
	if _, _, err := s.load(ctx, c, id); err != nil {
		return nil, err
	}
	if after < 0 || limit < 0 {
		return nil, invalid("after and limit cannot be negative")
	}
	evs, err := s.st.LoadAfter(ctx, id, after)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(evs) > limit {
		evs = evs[:limit]
	}
	return evs, nil
}
