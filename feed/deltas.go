package feed

import (
	"context"
	"sync"

	"github.com/agentloop/agentloop/model"
)

// Delta is a piece of a model reply as it streams in: not durable, not in
// the log, shown to people while the reply is being written. The complete
// reply reaches readers as a model.responded event.
type Delta struct {
	SessionID string
	model.Delta
}

// Deltas is the ephemeral stream of token deltas, keyed by session. Publish
// never blocks: a reader that does not keep up misses deltas, nothing else.
// The zero value is ready to use.
type Deltas struct {
	mu   sync.RWMutex
	subs map[string]map[chan Delta]struct{}
}

// Publish hands d to the readers of its session, dropping it for readers
// whose buffer is full.
func (ds *Deltas) Publish(d Delta) {
	ds.mu.RLock()
	defer ds.mu.RUnlock()
	for ch := range ds.subs[d.SessionID] {
		select {
		case ch <- d:
		default:
		}
	}
}

// Subscribe returns the deltas of a session published from now on, until
// ctx ends, when the channel is closed. buffer is how many deltas may wait
// (at least 1).
func (ds *Deltas) Subscribe(ctx context.Context, sessionID string, buffer int) <-chan Delta {
	ch := make(chan Delta, max(1, buffer))
	ds.mu.Lock()
	if ds.subs == nil {
		ds.subs = map[string]map[chan Delta]struct{}{}
	}
	if ds.subs[sessionID] == nil {
		ds.subs[sessionID] = map[chan Delta]struct{}{}
	}
	ds.subs[sessionID][ch] = struct{}{}
	ds.mu.Unlock()
	go func() {
		<-ctx.Done()
		ds.mu.Lock()
		delete(ds.subs[sessionID], ch)
		if len(ds.subs[sessionID]) == 0 {
			delete(ds.subs, sessionID)
		}
		ds.mu.Unlock()
		close(ch) // no Publish holds the lock, none can send any more
	}()
	return ch
}
