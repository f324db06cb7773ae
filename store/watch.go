package store

import (
	"sync"
	"sync/atomic"

	"github.com/agentloop/agentloop/loop"
)

// Notice says that a session's log now ends at Seq. A store sends one after
// every commit, per session, in commit order, so for one session the Seq of
// successive notices only grows.
//
// A notice is what PostgreSQL's LISTEN/NOTIFY can carry (tenant, session,
// sequence number). Events is an in-process shortcut: the committed events
// ending at Seq, in order, when the notice comes from the writer of this
// process; it is nil when the notice came from elsewhere, and a reader then
// loads the events with LoadAfter. Events must not be modified.
type Notice struct {
	Tenant    string
	SessionID string
	Seq       int64
	Events    []loop.Event
}

// Watchers is the list of functions a store calls after each commit. The
// zero value is ready to use; stores embed it to implement Store.Watch.
//
// Notify calls every watcher on the committing goroutine, so a watcher must
// return at once and never block (hand the notice to a buffered channel
// without waiting, as feed.Feed.Publish does): a slow watcher would stall
// every session's commits. A watcher must not call Watch or a stop function
// either (it runs under the list's read lock).
type Watchers struct {
	mu   sync.RWMutex
	next int
	fns  map[int]func(Notice)
	n    atomic.Int32
}

// Any reports whether anyone watches, so a store can skip building
// notices nobody reads.
func (w *Watchers) Any() bool { return w.n.Load() > 0 }

// Watch registers fn; the returned function unregisters it. fn sees every
// notice sent after Watch returns and none after stop returns.
func (w *Watchers) Watch(fn func(Notice)) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func(Notice){}
	}
	id := w.next
	w.next++
	w.fns[id] = fn
	w.n.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			delete(w.fns, id)
			w.n.Add(-1)
		})
	}
}

// Notify sends n to every watcher. Stores call it after the commit that
// made n.Seq durable, from one goroutine per database or under the lock
// that orders appends, so that each session's notices arrive in order.
func (w *Watchers) Notify(n Notice) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, fn := range w.fns {
		fn(n)
	}
}
