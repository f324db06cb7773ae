package loop

import (
	"context"
	"errors"
	"fmt"
)

// finish makes the session's last events durable before it stops running
// here, unless the session ran to its stop by prepare (a stepwise driver's
// step stays as it was) under Config.EndBehind on an AsyncLog: then they
// are handed to a commit behind its return (endBehind), and the session
// counts as ending until the commit lands.
func (s *Session) finish(ctx context.Context) error {
	s.commitsFor(ctx)
	if s.runsToStop && s.c.async != nil && s.r.cfg.EndBehind {
		return s.endBehind()
	}
	return s.c.flush()
}

// endBehind hands the session's last events to a commit behind its return.
func (s *Session) endBehind() error {
	if err := s.c.handOverNow(); err != nil {
		return err // a commit in flight failed: reported by the run, as flush does
	}
	e := s.r.endStarts(s.id, s.state)
	s.ending = e
	go func() { s.r.endLanded(s.id, e, s.c.waitPending()) }()
	return nil
}

// ending is a session's last commit in flight behind its return.
type ending struct {
	landed chan struct{} // closed when the commit reports
	err    error         // the commit's failure; set before landed closes
	state  *State        // the session's final state
}

// endStarts registers a session as ending: its last commit is in flight
// behind its return. Registered before the session leaves the live set
// (release), so that at no moment is it in neither: whatever reads its log
// through the runner meanwhile waits for the commit (awaitEnd).
func (r *Runner) endStarts(id string, st *State) *ending {
	e := &ending{landed: make(chan struct{}), state: st}
	r.mu.Lock()
	r.endingIDs[id] = e
	r.mu.Unlock()
	return e
}

// maxEndErrs bounds the failures kept for Sync; more are counted.
const maxEndErrs = 100

// endLanded ends what endStarts began, once the commit reported err; a
// failure is kept for Sync.
func (r *Runner) endLanded(id string, e *ending, err error) {
	e.err = err
	r.mu.Lock()
	if r.endingIDs[id] == e {
		delete(r.endingIDs, id)
	}
	if err != nil && len(r.endFailed) < maxEndErrs {
		r.endFailed[id] = e
	}
	switch {
	case err == nil:
	case len(r.endErrs) < maxEndErrs:
		r.endErrs = append(r.endErrs, fmt.Errorf("%w; the log holds the session without these events: Resume finishes it once the store works", err))
	default:
		r.endErrsMore++
	}
	r.mu.Unlock()
	close(e.landed)
}

// awaitEnd waits until the last events of a session that ended here
// behind its return (Config.EndBehind) are committed, so that what is read
// from the log next includes them.
func (r *Runner) awaitEnd(ctx context.Context, id string) error {
	r.mu.Lock()
	e := r.endingIDs[id]
	r.mu.Unlock()
	if e == nil {
		return nil
	}
	select {
	case <-e.landed:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// load reads a session's log, once an end of it committing behind a return
// here has landed (awaitEnd).
func (r *Runner) load(ctx context.Context, id string) ([]Event, error) {
	if err := r.awaitEnd(ctx, id); err != nil {
		return nil, err
	}
	return r.cfg.Log.Load(ctx, id)
}

// Sync waits until the last events of every session that ended here are
// committed — under Config.EndBehind they are not durable until then —
// and reports the commits of them that failed since the last Sync, each
// naming its session (errors.Is ErrNotSaved).
// Those sessions are in the log without the events of that commit: Resume
// recovers them. With no end committing behind it returns nil at
// once.
func (r *Runner) Sync(ctx context.Context) error {
	for {
		r.mu.Lock()
		var landed chan struct{}
		for _, e := range r.endingIDs {
			landed = e.landed
			break
		}
		if landed == nil {
			errs := r.endErrs
			if r.endErrsMore > 0 {
				errs = append(errs, fmt.Errorf("and %d more sessions whose last events were not saved (%w)", r.endErrsMore, ErrNotSaved))
			}
			r.endErrs, r.endErrsMore = nil, 0
			r.mu.Unlock()
			return errors.Join(errs...)
		}
		r.mu.Unlock()
		select {
		case <-landed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Wait waits until session id no longer runs here (it ended, paused or
// waits for a person) and its last events are committed — under
// Config.EndBehind that is after Run returned — and returns its final
// state, which must not be modified. Sync waits for every session; Wait
// for this one. The error is the session's own (as Session.Wait returns
// it), or its last commit's failure (errors.Is ErrNotSaved; Sync reports
// it too, and Wait until the session runs here again): the log then holds
// the session without those events, and Resume finishes it. A session
// that does not run here is read from the log as it stands.
func (r *Runner) Wait(ctx context.Context, id string) (*State, error) {
	r.mu.Lock()
	s, live := r.live[id]
	e := r.endingIDs[id]
	if e == nil {
		e = r.endFailed[id] // landed already
	}
	r.mu.Unlock()
	var st *State
	if live {
		var err error
		if st, err = s.Wait(ctx); err != nil {
			return st, err
		}
		e = s.ending // set before done closed
	}
	if e != nil {
		select {
		case <-e.landed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		if st == nil {
			st = e.state
		}
		if e.err != nil {
			return st, e.err
		}
	}
	if st != nil {
		return st, nil
	}
	events, err := r.cfg.Log.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return Fold(events)
}
