package loop

import (
	"context"
	"errors"
	"fmt"
)

// finish makes the session's last events durable before it stops running
// here, or — under Config.EndBehind, for a session run to its stop by
// prepare (a stepwise driver's step stays durable when it returns), on an
// AsyncLog — hands them to a commit that lands after (endBehind).
func (s *Session) finish(ctx context.Context) error {
	s.commitsFor(ctx)
	if !s.mayEndBehind || s.c.async == nil {
		return s.c.flush()
	}
	return s.endBehind()
}

// endBehind hands the session's last events to a commit behind its return
// and registers the session as ending until every commit in flight has
// reported. Registered before the session leaves the live set (release),
// so that at no moment is it in neither: whatever reads its log through
// the runner meanwhile waits for the commit (awaitEnd).
func (s *Session) endBehind() error {
	c := &s.c
	if err := c.handOverNow(); err != nil {
		return err // a commit in flight failed: reported by the run, as flush does
	}
	landed := make(chan struct{})
	r := s.r
	r.mu.Lock()
	r.ending[s.id] = landed
	r.mu.Unlock()
	go func() {
		err := c.waitPending()
		r.mu.Lock()
		if r.ending[s.id] == landed {
			delete(r.ending, s.id)
		}
		if err != nil {
			r.endErrs = append(r.endErrs, fmt.Errorf("%w; the log holds the session as before its last step: Resume finishes it once the store works", err))
		}
		r.mu.Unlock()
		close(landed)
	}()
	return nil
}

// awaitEnd waits until the last events of a session that ended here
// behind its return (Config.EndBehind) are committed, so that what is read
// from the log next includes them.
func (r *Runner) awaitEnd(ctx context.Context, id string) error {
	r.mu.Lock()
	landed := r.ending[id]
	r.mu.Unlock()
	if landed == nil {
		return nil
	}
	select {
	case <-landed:
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
// durable (see Config.EndBehind) and reports the commits of them that
// failed since the last Sync, each naming its session (errors.Is
// ErrNotSaved). Those sessions are in the log as they were before their
// last step: Resume recovers them. Without EndBehind it returns nil at
// once.
func (r *Runner) Sync(ctx context.Context) error {
	for {
		r.mu.Lock()
		var landed chan struct{}
		for _, ch := range r.ending {
			landed = ch
			break
		}
		if landed == nil {
			errs := r.endErrs
			r.endErrs = nil
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
