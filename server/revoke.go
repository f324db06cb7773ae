package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentloop/agentloop/store"
)

// liveKeys ends the requests of a revoked key: those of a key revoked
// through this server at once, those of a key revoked elsewhere (the CLI,
// another server) when a look-up, once a second while any keyed request
// is open, no longer finds it. An open event stream is such a request, so
// a revoked key stops seeing events.
type liveKeys struct {
	keys    store.Keys
	mu      sync.Mutex
	open    map[*liveRequest]struct{}
	polling bool
}

type liveRequest struct {
	hash, id string
	cancel   context.CancelFunc
}

// hold registers a request of key (id, hash): the context it returns ends
// when the key is revoked; release unregisters it.
func (l *liveKeys) hold(ctx context.Context, id, hash string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	req := &liveRequest{hash: hash, id: id, cancel: cancel}
	l.mu.Lock()
	if l.open == nil {
		l.open = map[*liveRequest]struct{}{}
	}
	l.open[req] = struct{}{}
	if !l.polling && l.keys != nil {
		l.polling = true
		go l.poll()
	}
	l.mu.Unlock()
	return ctx, func() {
		l.mu.Lock()
		delete(l.open, req)
		l.mu.Unlock()
		cancel()
	}
}

// revoked ends every open request of the key with this ID or hash.
func (l *liveKeys) revoked(id, hash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for req := range l.open {
		if (id != "" && req.id == id) || (hash != "" && req.hash == hash) {
			req.cancel()
			delete(l.open, req)
		}
	}
}

// poll looks up the keys of open requests once a second until none is
// open.
func (l *liveKeys) poll() {
	for {
		time.Sleep(time.Second)
		l.mu.Lock()
		hashes := map[string]bool{}
		for req := range l.open {
			hashes[req.hash] = true
		}
		if len(hashes) == 0 {
			l.polling = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		for h := range hashes {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := l.keys.KeyByHash(ctx, h)
			cancel()
			if errors.Is(err, store.ErrNotFound) { // another error (the database is away) is no revocation
				l.revoked("", h)
			}
		}
	}
}
