package service

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// fencedLog is the runner's view of the store: every append of a session
// this process owns carries its lease token, so nothing is recorded after
// the lease passed to another process.
//
// A session being started (startTaking) has no lease yet: its first
// append takes it, in the same commit (store.LeaseStarter).
type fencedLog struct {
	st store.Store
	mu sync.Mutex
	// leases are the sessions owned here, by ID.
	leases map[string]store.Lease
	// taking are the sessions whose first append takes their lease, by
	// ID.
	taking map[string]takeLease
	// starting are the sessions whose first append, taking their lease,
	// commits behind their first steps (AppendAsync), by ID: closed once
	// its outcome is known and reported. Their later appends wait for it,
	// as they need its token and must follow it.
	starting map[string]chan struct{}
}

// takeLease is the lease a session's first append takes.
type takeLease struct {
	owner string
	ttl   time.Duration
}

func newFencedLog(st store.Store) *fencedLog {
	return &fencedLog{st: st, leases: map[string]store.Lease{}, taking: map[string]takeLease{}, starting: map[string]chan struct{}{}}
}

// startTaking makes the next append of session id take its lease for
// owner, when the store can do both in one commit; it reports whether it
// can.
func (l *fencedLog) startTaking(id, owner string, ttl time.Duration) bool {
	if _, ok := l.st.(store.LeaseStarter); !ok {
		return false
	}
	l.mu.Lock()
	l.taking[id] = takeLease{owner: owner, ttl: ttl}
	l.mu.Unlock()
	return true
}

// stopTaking forgets a lease not taken (the session did not start).
func (l *fencedLog) stopTaking(id string) {
	l.mu.Lock()
	delete(l.taking, id)
	l.mu.Unlock()
}

// appendTaking appends a starting session's events taking its lease, and
// waits for the outcome; taken reports that the session was starting.
func (l *fencedLog) appendTaking(ctx context.Context, events []loop.Event) (taken bool, err error) {
	outcome := make(chan error, 1)
	if !l.takeBehind(ctx, events, func(err error) { outcome <- err }) {
		return false, nil
	}
	return true, <-outcome
}

// asLog returns the log for the runner: an AsyncLog when the store can
// append fenced without waiting, so commits keep overlapping the
// session's next steps.
func (l *fencedLog) asLog() loop.Log {
	if _, ok := l.st.(fencedAsyncAppender); ok {
		return asyncFencedLog{l}
	}
	return l
}

// fencedAsyncAppender is a store that appends fenced without blocking.
type fencedAsyncAppender interface {
	AppendFencedAsync(ctx context.Context, token int64, events []loop.Event, done func(error))
}

// token returns the token of session id's lease, once a start taking it
// behind the session's first steps has reported. Until then it blocks:
// an AppendAsync of that session's next events waits for one commit, its
// start's, rather than returning at once as AsyncLog describes.
func (l *fencedLog) token(id string) (int64, bool) {
	l.mu.Lock()
	started := l.starting[id]
	l.mu.Unlock()
	if started != nil {
		<-started
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	le, ok := l.leases[id]
	return le.Token, ok
}

// takeBehind appends a starting session's events taking its lease, on a
// goroutine of its own, and reports the outcome to done: the session's
// first model call overlaps the commit rather than waiting for it (its
// start is still durable before the service says it exists: Runner.Start
// waits for this outcome). taken reports that the session was starting.
func (l *fencedLog) takeBehind(ctx context.Context, events []loop.Event, done func(error)) (taken bool) {
	id := events[0].SessionID
	started := make(chan struct{})
	l.mu.Lock()
	t, ok := l.taking[id]
	if ok {
		delete(l.taking, id)
		l.starting[id] = started
	}
	l.mu.Unlock()
	if !ok {
		return false
	}
	go func() {
		le, err := l.st.(store.LeaseStarter).AppendAcquiring(ctx, t.owner, t.ttl, events...)
		l.mu.Lock()
		if err == nil {
			l.leases[id] = le
		}
		l.mu.Unlock()
		// Reported before later appends may go: outcomes are reported in
		// the order the appends were handed over.
		done(err)
		l.mu.Lock()
		delete(l.starting, id)
		l.mu.Unlock()
		close(started)
	}()
	return true
}

// Append appends a session's events under its lease; a session without a
// lease here is refused: the service owns every session it runs.
func (l *fencedLog) Append(ctx context.Context, events ...loop.Event) error {
	if len(events) == 0 {
		return nil
	}
	tok, ok := l.token(events[0].SessionID)
	if !ok {
		if taken, err := l.appendTaking(ctx, events); taken {
			return err
		}
		return errNotOwned(events[0].SessionID)
	}
	return l.st.AppendFenced(ctx, tok, events...)
}

func (l *fencedLog) Load(ctx context.Context, id string) ([]loop.Event, error) {
	return l.st.Load(ctx, id)
}

type asyncFencedLog struct{ *fencedLog }

func (l asyncFencedLog) AppendAsync(ctx context.Context, events []loop.Event, done func(error)) {
	if len(events) == 0 {
		done(nil)
		return
	}
	tok, ok := l.token(events[0].SessionID)
	if !ok {
		if l.takeBehind(ctx, events, done) {
			return
		}
		done(errNotOwned(events[0].SessionID))
		return
	}
	l.st.(fencedAsyncAppender).AppendFencedAsync(ctx, tok, events, done)
}

func errNotOwned(id string) error {
	return &Error{Kind: ErrConflict, Msg: "session " + id + " is not owned by this process (no lease); nothing was recorded", Err: store.ErrLeaseLost}
}

// own takes the lease of session id for this process. A session that
// stopped running here a moment ago is first let go (see letGo): its
// lease, given up behind it, would be this one.
func (s *Service) own(ctx context.Context, id string) error {
	if _, here := s.runner.Session(id); !here {
		if err := s.letGo(ctx, id); err != nil {
			return err
		}
	}
	le, err := s.st.Acquire(ctx, id, s.cfg.Owner, s.cfg.LeaseTTL)
	if errors.Is(err, store.ErrLeaseHeld) {
		// The owner may be a process of this machine that died: its
		// lease is free now rather than at its expiry.
		if held, lerr := s.st.LeasesOf(ctx, id); lerr == nil {
			if cur, ok := held[id]; ok && cur.Owner != s.cfg.Owner && processGone(cur.Owner) {
				_ = s.st.Release(ctx, cur)
				le, err = s.st.Acquire(ctx, id, s.cfg.Owner, s.cfg.LeaseTTL)
			}
		}
	}
	if err != nil {
		return err
	}
	s.log.mu.Lock()
	s.log.leases[id] = le
	s.log.mu.Unlock()
	// A rewind a crash cut short is settled before anything else is
	// done with the session (rewind.go).
	if err := s.finishRestore(ctx, id); err != nil {
		s.disown(id)
		return err
	}
	return nil
}

// disown gives the lease of session id up.
func (s *Service) disown(id string) {
	s.log.mu.Lock()
	le, ok := s.log.leases[id]
	delete(s.log.leases, id)
	s.log.mu.Unlock()
	if ok {
		_ = s.st.Release(context.Background(), le)
	}
}

// releaseAll gives up the leases of sessions not running any more.
func (l *fencedLog) releaseAll(st store.Store) {
	l.mu.Lock()
	all := l.leases
	l.leases = map[string]store.Lease{}
	l.mu.Unlock()
	for _, le := range all {
		_ = st.Release(context.Background(), le)
	}
}

// keepWhileRunning gives the lease up once the session stops running here.
//
// The lease of a session that ended is only forgotten, not released (one
// write less per session): no process runs an ended session again, and
// the lease expires by itself.
func (s *Service) keepWhileRunning(sess *loop.Session) {
	letGo := s.lettingGo(sess.ID())
	s.running.Add(1)
	sess.AfterStop(func() {
		defer s.running.Done()
		defer letGo()
		st, err := sess.Wait(context.Background())
		if err == nil && st.Status.Finished() {
			s.log.mu.Lock()
			delete(s.log.leases, sess.ID())
			s.log.mu.Unlock()
			return
		}
		if err != nil && s.cfg.OnFailed != nil {
			s.cfg.OnFailed(sess.ID(), err)
		}
		s.disown(sess.ID())
	})
}

// renewLeases renews every lease held here, three times per TTL. A lease
// that was lost is dropped: the fence then refuses the session's appends.
func (s *Service) renewLeases(ctx context.Context) {
	t := time.NewTicker(max(s.cfg.LeaseTTL/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.log.mu.Lock()
		held := make([]store.Lease, 0, len(s.log.leases))
		for _, le := range s.log.leases {
			held = append(held, le)
		}
		s.log.mu.Unlock()
		for len(held) > 0 {
			n := min(len(held), renewBatch)
			renewed, lost := renew(ctx, s.st, held[:n], s.cfg.LeaseTTL)
			held = held[n:]
			s.log.mu.Lock()
			for _, le := range renewed {
				if cur, ok := s.log.leases[le.SessionID]; ok && cur.Token == le.Token {
					s.log.leases[le.SessionID] = le
				}
			}
			for _, le := range lost {
				if cur, ok := s.log.leases[le.SessionID]; ok && cur.Token == le.Token {
					delete(s.log.leases, le.SessionID)
				}
			}
			s.log.mu.Unlock()
		}
	}
}

// renewBatch is the most leases renewed in one write: a server running
// thousands of sessions renews them in a few commits, each of a bounded
// size.
const renewBatch = 1000

// renew renews leases, in one write when the store can (store.LeaseRenewer),
// and returns those renewed and those lost to another owner. On a
// failure of the store neither is known: the leases are tried again at
// the next tick.
func renew(ctx context.Context, st store.Leases, leases []store.Lease, ttl time.Duration) (renewed, lost []store.Lease) {
	var err error
	if rn, ok := st.(store.LeaseRenewer); ok {
		renewed, err = rn.RenewAll(ctx, leases, ttl)
	} else {
		renewed, err = store.RenewEach(ctx, st, leases, ttl)
	}
	if err != nil {
		return nil, nil
	}
	kept := make(map[string]bool, len(renewed))
	for _, le := range renewed {
		kept[le.SessionID] = true
	}
	for _, le := range leases {
		if !kept[le.SessionID] {
			lost = append(lost, le)
		}
	}
	return renewed, lost
}
