package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentloop/agentloop/store"
)

// listen holds a connection that LISTENs for commits of every server on
// the database and passes other servers' notices to this store's
// watchers (this store's own commits are passed on by its writer, with
// their events). After a lost connection it reconnects and sends a notice
// for every session that may have moved meanwhile, so no watcher waits
// forever for a notice that went missing.
func (s *Store) listen(ctx context.Context, ready chan<- error) {
	defer close(s.listenDone)
	first := true
	var since time.Time
	for backoff := 100 * time.Millisecond; ctx.Err() == nil; backoff = min(backoff*2, 5*time.Second) {
		err := s.listenOnce(ctx, func() {
			if first {
				ready <- nil
				first = false
			} else {
				s.catchUp(ctx, since)
			}
			backoff = 100 * time.Millisecond
		})
		if first {
			ready <- err
			return
		}
		if ctx.Err() != nil {
			return
		}
		since = s.opts.clock().Add(-time.Minute) // what may have been missed, with room for clock skew
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
}

// listenOnce listens on one connection until it fails or ctx ends.
func (s *Store) listenOnce(ctx context.Context, listening func()) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				// The connection is mid-wait: drop it rather than hand
				// it back to the pool in an unknown state.
				conn.Hijack().Close(context.Background())
			}
			return err
		}
		var msg notice
		if json.Unmarshal([]byte(n.Payload), &msg) != nil || msg.Origin == s.origin {
			continue
		}
		s.watchers.Notify(store.Notice{Tenant: msg.Tenant, SessionID: msg.ID, Seq: msg.Seq})
	}
}

// catchUp sends a notice for each session that may have moved while
// nobody listened: every unfinished one, and those updated since t.
func (s *Store) catchUp(ctx context.Context, t time.Time) {
	rows, err := s.pool.Query(ctx, `SELECT tenant, id, last_seq FROM sessions WHERE NOT (status = ANY($1)) OR updated_at >= $2`, finished, t)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var n store.Notice
		if rows.Scan(&n.Tenant, &n.SessionID, &n.Seq) == nil {
			s.watchers.Notify(n)
		}
	}
}
