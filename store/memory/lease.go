package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/store"
)

// Acquire takes a session's lease; see store.Leases.
func (s *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Lease{}, fmt.Errorf("memory store: acquire session %s: %w", id, store.ErrClosed)
	}
	cur, err := s.grantLocked(id, owner, ttl)
	if err != nil {
		return store.Lease{}, err
	}
	s.tokens[id] = max(s.tokens[id], cur.Token)
	s.leases[id] = cur
	return cur, nil
}

// grantLocked is the lease Acquire would grant owner, or ErrLeaseHeld;
// it changes nothing (a new holder's token is s.tokens[id]+1). s.mu held.
func (s *Store) grantLocked(id, owner string, ttl time.Duration) (store.Lease, error) {
	now := s.clock()
	cur, ok := s.leases[id]
	switch {
	case ok && cur.Owner == owner && cur.Expires.After(now):
		cur.Expires = now.Add(ttl) // the holder renews; same token
		return cur, nil
	case ok && cur.Expires.After(now):
		return store.Lease{}, fmt.Errorf("session %s is held by %s until %s: %w", id, cur.Owner, cur.Expires.Format(time.RFC3339), store.ErrLeaseHeld)
	default:
		return store.Lease{SessionID: id, Owner: owner, Token: s.tokens[id] + 1, Expires: now.Add(ttl)}, nil
	}
}

// Renew extends a lease still held.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	return store.RenewOne(ctx, s, l, ttl)
}

// RenewAll renews the leases still held (see store.LeaseRenewer).
func (s *Store) RenewAll(ctx context.Context, leases []store.Lease, ttl time.Duration) ([]store.Lease, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("memory store: renew leases: %w", store.ErrClosed)
	}
	expires := s.clock().Add(ttl)
	var renewed []store.Lease
	for _, l := range leases {
		if cur, ok := s.leases[l.SessionID]; ok && cur.Token == l.Token {
			cur.Expires = expires
			s.leases[l.SessionID] = cur
			renewed = append(renewed, cur)
		}
	}
	return renewed, nil
}

// Release expires a lease at once if it is still current.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.leases[l.SessionID]; ok && cur.Token == l.Token {
		cur.Expires = time.Time{}
		s.leases[l.SessionID] = cur
	}
	return nil
}

// LeasesOf returns the current leases of the sessions (of all when none given).
func (s *Store) LeasesOf(ctx context.Context, ids ...string) (map[string]store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]store.Lease{}
	if len(ids) == 0 {
		for id, l := range s.leases {
			out[id] = l
		}
		return out, nil
	}
	for _, id := range ids {
		if l, ok := s.leases[id]; ok {
			out[id] = l
		}
	}
	return out, nil
}

// RequestControl stores a control request.
func (s *Store) RequestControl(ctx context.Context, c store.Control) (store.Control, error) {
	if err := ctx.Err(); err != nil {
		return store.Control{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Control{}, fmt.Errorf("memory store: control session %s: %w", c.SessionID, store.ErrClosed)
	}
	c.ID = int64(len(s.controls)) + 1
	c.CreatedAt, c.Done, c.Outcome = s.clock().UTC(), false, ""
	s.controls = append(s.controls, c)
	return c, nil
}

// ControlsAfter returns pending controls with ID > after, oldest first.
func (s *Store) ControlsAfter(ctx context.Context, after int64) ([]store.Control, error) {
	return s.pending(ctx, func(c store.Control) bool { return c.ID > after })
}

// PendingControls returns a session's pending controls, oldest first.
func (s *Store) PendingControls(ctx context.Context, id string) ([]store.Control, error) {
	return s.pending(ctx, func(c store.Control) bool { return c.SessionID == id })
}

func (s *Store) pending(ctx context.Context, keep func(store.Control) bool) ([]store.Control, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []store.Control
	for _, c := range s.controls {
		if !c.Done && keep(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// CompleteControl marks a control done; the first outcome stays.
func (s *Store) CompleteControl(ctx context.Context, id int64, outcome string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > int64(len(s.controls)) {
		return fmt.Errorf("control %d: %w", id, store.ErrNotFound)
	}
	if c := &s.controls[id-1]; !c.Done {
		c.Done, c.Outcome = true, outcome
	}
	return nil
}

// Control returns one control.
func (s *Store) Control(ctx context.Context, id int64) (store.Control, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if id < 1 || id > int64(len(s.controls)) || s.controls[id-1].SessionID == "" {
		return store.Control{}, fmt.Errorf("control %d: %w", id, store.ErrNotFound)
	}
	return s.controls[id-1], nil
}

// Delete removes a session, its lease and its controls.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memory store: delete session %s: %w", id, store.ErrClosed)
	}
	if _, ok := s.sessions[id]; !ok {
		return fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	delete(s.sessions, id)
	delete(s.leases, id)
	for i := range s.controls {
		if s.controls[i].SessionID == id {
			s.controls[i] = store.Control{ID: s.controls[i].ID, Done: true} // IDs stay dense; Control reports it gone
		}
	}
	return nil
}
