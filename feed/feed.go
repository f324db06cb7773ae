// Package feed fans a store's committed events out to any number of readers.
//
// The log is the stream: a reader asks for a session's events after a
// sequence number and gets the stored ones (replay), then new ones as they
// are committed (live), each exactly once and in order, with no gap and no
// duplicate where replay turns into live. An SSE handler is a loop over
// Events(ctx, id, lastEventID); a progress display is one more reader.
//
// Guarantees:
//   - Publish never blocks and costs a map lookup plus one non-blocking
//     channel send per reader of the session: a reader that does not keep
//     up never slows the writer or any other session.
//   - A reader whose buffer is full misses live notices; it is told so,
//     reads what it missed from the store (LoadAfter), and carries on live.
//     A reader that lags far behind still sees every event once, in order.
//   - Notices without events (from another process: LISTEN/NOTIFY) make
//     readers read the store, so the feed works across processes too.
//
// Token deltas are not in the log; they go on a separate ephemeral stream
// (Deltas), best effort.
//
// Wiring (the CLI does this in cmd/agentloop): the composition root makes one
// feed per store, f := feed.New(st) with defer st.Watch(f.Publish)(), and
// one Deltas, passing OnDelta: func(id string, d model.Delta) {
// deltas.Publish(feed.Delta{SessionID: id, Delta: d}) } to the runner. The
// runner publishes nothing itself: the store's writer does, after commit.
// A progress display, an SSE handler or a test ranges over
// f.Events(ctx, id, lastSeen) until it sees the session stop (session.ended,
// .paused or .waiting), and reads deltas.Subscribe(ctx, id, n).
package feed

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// Source is where readers replay from and catch up: a store.Store.
type Source interface {
	LoadAfter(ctx context.Context, sessionID string, after int64) ([]loop.Event, error)
}

// Feed is the fan-out. Connect it to a store with
//
//	f := feed.New(st)
//	stop := st.Watch(f.Publish)
//
// The zero value is not usable; call New.
type Feed struct {
	src    Source
	buffer int

	mu   sync.RWMutex
	subs map[string]map[*reader]struct{}
}

// Option configures New.
type Option func(*Feed)

// WithBuffer sets how many commits a reader may fall behind before it
// leaves the live path and catches up from the store (default 64).
func WithBuffer(n int) Option { return func(f *Feed) { f.buffer = max(1, n) } }

// New returns a feed that replays from src.
func New(src Source, opts ...Option) *Feed {
	f := &Feed{src: src, buffer: 64, subs: map[string]map[*reader]struct{}{}}
	for _, o := range opts {
		o(f)
	}
	return f
}

// reader is one call of Events: live notices arrive on live; lagged
// (capacity 1) says some were dropped and the store must be read.
type reader struct {
	live   chan store.Notice
	lagged chan struct{}
}

// Publish hands a commit to the readers of its session without waiting.
// Give it only durable events (store.Store.Watch does), per session in
// order. It is safe to call from any goroutine.
func (f *Feed) Publish(n store.Notice) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for r := range f.subs[n.SessionID] {
		select {
		case r.live <- n:
		default:
			select {
			case r.lagged <- struct{}{}:
			default: // already told
			}
		}
	}
}

func (f *Feed) join(id string) *reader {
	r := &reader{live: make(chan store.Notice, f.buffer), lagged: make(chan struct{}, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs[id] == nil {
		f.subs[id] = map[*reader]struct{}{}
	}
	f.subs[id][r] = struct{}{}
	return r
}

func (f *Feed) leave(id string, r *reader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs[id], r)
	if len(f.subs[id]) == 0 {
		delete(f.subs, id)
	}
}

// Events yields the events of a session with Seq > after, in order and
// each once: first those already stored, then new ones as they are
// committed, until ctx ends or the loop stops. A session that does not
// exist yet is waited for. The only errors yielded are the store's (the
// iteration then stops); ctx ending stops it silently.
func (f *Feed) Events(ctx context.Context, sessionID string, after int64) iter.Seq2[loop.Event, error] {
	return func(yield func(loop.Event, error) bool) {
		// Join before replaying: whatever commits during the replay is
		// then on live, and duplicates are skipped by sequence number.
		r := f.join(sessionID)
		defer f.leave(sessionID, r)
		last := max(after, 0)
		// catchUp yields what the store has after last; false means stop.
		catchUp := func() bool {
			events, err := f.src.LoadAfter(ctx, sessionID, last)
			if errors.Is(err, loop.ErrNotFound) {
				return true // not started yet: its first commit wakes us
			}
			if err != nil {
				if ctx.Err() == nil {
					yield(loop.Event{}, err)
				}
				return false
			}
			for _, e := range events {
				if e.Seq <= last {
					continue
				}
				if !yield(e, nil) {
					return false
				}
				last = e.Seq
			}
			return true
		}
		if !catchUp() {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.lagged:
				if !catchUp() {
					return
				}
			case n := <-r.live:
				if n.Seq <= last {
					continue // seen in the replay or a catch-up
				}
				if len(n.Events) == 0 || n.Events[0].Seq > last+1 {
					// From another process, or after a gap: read the store.
					if !catchUp() {
						return
					}
					continue
				}
				for _, e := range n.Events {
					if e.Seq <= last {
						continue
					}
					if !yield(e, nil) {
						return
					}
					last = e.Seq
				}
			}
		}
	}
}
