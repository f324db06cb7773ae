package loop

import (
	"context"
	"errors"
)

// endsBehind reports whether the session's end commits behind its return
// (Config.EndBehind): only a session run to its stop by prepare, on an
// AsyncLog. A stepwise driver's step stays durable when it returns.
func (s *Session) endsBehind() bool {
	return s.behindEnd && s.c.async != nil
}

// finish makes the session's last events durable before it stops running
// here, or hands them to a commit that lands after (endBehind).
func (s *Session) finish(ctx context.Context) error {
	s.commitsFor(ctx)
	if !s.endsBehind() {
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
	if err := c.reap(); err != nil {
		return err // a commit in flight failed: reported by the run, as flush does
	}
	for {
		c.mu.Lock()
		if len(c.buf) == 0 || c.inflight < maxInflight {
			break
		}
		c.mu.Unlock()
		// The outcome channel has room for maxInflight: the store's
		// goroutine must never block reporting one more.
		if err := c.waitOne(); err != nil {
			return err
		}
	}
	if len(c.buf) > 0 {
		c.handOver()
	}
	c.mu.Unlock()
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
			r.endErrs = append(r.endErrs, err)
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
