package service

import (
	"context"
	"time"

	"github.com/agentloop/agentloop/loop"
)

// A session's stop (its end, pause or wait) is committed, and readable by
// every client, a moment before the session leaves the runner and then
// gives up its lease here. A control or a delete sent in that moment, by a
// client that has just read the stop, waits for the session to let go
// instead of being refused as if it still ran ("terminate it first",
// "already running") or taking a lease about to be released behind it.

// letGoWait is the longest a control or a delete waits for a session to
// let go: far longer than it takes, short enough that a stuck one is
// reported.
const letGoWait = 10 * time.Second

// lettingGo records that the session runs here; the returned function
// says it stopped and its lease was given up (or forgotten).
func (s *Service) lettingGo(id string) (done func()) {
	gone := make(chan struct{})
	s.letMu.Lock()
	if s.letting == nil {
		s.letting = map[string]chan struct{}{}
	}
	s.letting[id] = gone
	s.letMu.Unlock()
	return func() {
		s.letMu.Lock()
		if s.letting[id] == gone {
			delete(s.letting, id)
		}
		s.letMu.Unlock()
		close(gone)
	}
}

// letGo waits until a session that ran here has given its lease up.
func (s *Service) letGo(ctx context.Context, id string) error {
	s.letMu.Lock()
	gone := s.letting[id]
	s.letMu.Unlock()
	if gone == nil {
		return nil
	}
	t := time.NewTimer(letGoWait)
	defer t.Stop()
	select {
	case <-gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return conflict("session %s stopped running here but has not let go of its lease after %s: try again later", id, letGoWait)
	}
}

// settle waits for a session running here whose stop is recorded at seq
// to let go. moved reports that its log went on past seq instead: a
// control of this process resumed it, and it runs here.
func (s *Service) settle(ctx context.Context, sess *loop.Session, seq int64) (moved bool, err error) {
	wctx, cancel := context.WithTimeout(ctx, letGoWait)
	defer cancel()
	next := make(chan struct{})
	go func() {
		for _, err := range s.feed.Events(wctx, sess.ID(), seq) {
			if err == nil {
				close(next)
			}
			return
		}
	}()
	select {
	case <-sess.Done():
		return false, s.letGo(ctx, sess.ID())
	case <-next:
		return true, nil
	case <-wctx.Done():
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, conflict("session %s stopped but still runs here after %s: try again later", sess.ID(), letGoWait)
	}
}
