// Package memory is a Store that keeps session logs in process memory. It is
// for tests, demos and as a non-durable baseline in benchmarks: nothing
// survives Close or the process.
//
// Events are kept as given (no encoding), so a caller that mutates an
// event's payload after appending it changes the stored log too; Load
// returns a fresh slice that shares the payloads.
package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/appendcheck"
)

// Store is an in-memory store.Store. The zero value is not usable; call New.
type Store struct {
	mu       sync.RWMutex
	sessions map[string]*session
	closed   bool
	watchers store.Watchers
	clock    func() time.Time

	leases   map[string]store.Lease
	tokens   map[string]int64 // the last token of each session, kept across releases
	controls []store.Control
	keys     map[string]store.Key      // by hash
	prompts  map[string][]store.Prompt // by tenant + "\x00" + name, versions in order
}

type session struct {
	events  []loop.Event
	summary loop.Summary
}

var _ store.Store = (*Store)(nil)

// Option configures New.
type Option func(*Store)

// WithClock sets the time source of leases and controls (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.clock = now } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{sessions: map[string]*session{}, clock: time.Now, leases: map[string]store.Lease{}, tokens: map[string]int64{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Append adds events to their sessions' logs, all or nothing.
func (s *Store) Append(ctx context.Context, events ...loop.Event) error {
	return s.append(ctx, 0, false, events)
}

// AppendFenced appends while token is the current lease token of the
// events' session.
func (s *Store) AppendFenced(ctx context.Context, token int64, events ...loop.Event) error {
	return s.append(ctx, token, true, events)
}

func (s *Store) append(ctx context.Context, token int64, fenced bool, events []loop.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	runs, err := appendcheck.Split(events)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendLocked(runs, token, fenced)
}

// AppendAcquiring appends events of one session and takes its lease,
// both or neither; see store.LeaseStarter.
func (s *Store) AppendAcquiring(ctx context.Context, owner string, ttl time.Duration, events ...loop.Event) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	runs, err := appendcheck.Split(events)
	if err != nil {
		return store.Lease{}, err
	}
	if len(runs) != 1 {
		return store.Lease{}, fmt.Errorf("memory store: append and acquire: %d sessions' events given, want one session's", len(runs))
	}
	id := runs[0].SessionID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Lease{}, fmt.Errorf("memory store: append to session %s: %w", id, store.ErrClosed)
	}
	le, err := s.grantLocked(id, owner, ttl)
	if err != nil {
		return store.Lease{}, err
	}
	if err := s.appendLocked(runs, 0, false); err != nil {
		return store.Lease{}, err
	}
	s.tokens[id] = max(s.tokens[id], le.Token)
	s.leases[id] = le
	return le, nil
}

// appendLocked appends runs, fenced by token when fenced; s.mu held.
func (s *Store) appendLocked(runs []appendcheck.Run, token int64, fenced bool) error {
	if s.closed {
		return fmt.Errorf("memory store: append to session %s: %w", runs[0].SessionID, store.ErrClosed)
	}
	stored := make([]bool, len(runs)) // a retry of events stored already
	for k, r := range runs {
		if fenced && s.leases[r.SessionID].Token != token {
			return fmt.Errorf("memory store: append to session %s with lease token %d: %w", r.SessionID, token, store.ErrLeaseLost)
		}
		var last int64
		ss := s.sessions[r.SessionID]
		if ss != nil {
			last = ss.summary.LastSeq
		}
		if r.First != last+1 {
			if !s.alreadyStored(ss, r) {
				return appendcheck.Conflict(r, last)
			}
			stored[k] = true
		}
	}
	for k, r := range runs {
		if stored[k] {
			continue
		}
		ss := s.sessions[r.SessionID]
		if ss == nil {
			ss = &session{}
			s.sessions[r.SessionID] = ss
		}
		ss.events = append(ss.events, r.Events...)
		for _, e := range r.Events {
			ss.summary.Apply(e)
		}
	}
	// Still under the lock, so each session's notices go out in order.
	// The stored copy is handed out: append never rewrites it.
	for k, r := range runs {
		if stored[k] {
			continue
		}
		ev := s.sessions[r.SessionID].events
		s.watchers.Notify(store.Notice{SessionID: r.SessionID, Seq: r.Last, Events: slices.Clip(ev[r.First-1 : r.Last])})
	}
	return nil
}

// alreadyStored reports whether every event of r is in ss's log already.
func (s *Store) alreadyStored(ss *session, r appendcheck.Run) bool {
	if ss == nil || r.First < 1 || r.Last > int64(len(ss.events)) {
		return false
	}
	for _, e := range r.Events {
		if !appendcheck.Identical(ss.events[e.Seq-1], e) {
			return false
		}
	}
	return true
}

// Watch calls fn after each Append, once per session written, while the
// append still holds the store's lock: fn must not block or use the store.
func (s *Store) Watch(fn func(store.Notice)) (stop func()) { return s.watchers.Watch(fn) }

// Load returns a copy of a session's log.
func (s *Store) Load(ctx context.Context, sessionID string) ([]loop.Event, error) {
	return s.LoadAfter(ctx, sessionID, 0)
}

// LoadAfter returns a copy of the events of a session with Seq > after.
func (s *Store) LoadAfter(ctx context.Context, sessionID string, after int64) ([]loop.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("memory store: load session %s: %w", sessionID, store.ErrClosed)
	}
	ss := s.sessions[sessionID]
	if ss == nil {
		return nil, fmt.Errorf("session %s: %w", sessionID, loop.ErrNotFound)
	}
	// Seq k is at index k-1: the log has no gaps.
	from := min(max(after, 0), int64(len(ss.events)))
	return slices.Clone(ss.events[from:]), nil
}

// List returns summaries newest first (by creation time, then by ID, both
// descending).
func (s *Store) List(ctx context.Context, f store.Filter) ([]loop.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, fmt.Errorf("memory store: list: %w", store.ErrClosed)
	}
	out := make([]loop.Summary, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sum := ss.summary
		if f.Unfinished && sum.Status.Finished() {
			continue
		}
		if len(f.Status) > 0 && !slices.Contains(f.Status, sum.Status) {
			continue
		}
		if f.Tenant != "" && sum.Tenant != f.Tenant {
			continue
		}
		if (!f.CreatedAfter.IsZero() && sum.CreatedAt.Before(f.CreatedAfter)) || (!f.CreatedBefore.IsZero() && !sum.CreatedAt.Before(f.CreatedBefore)) {
			continue
		}
		if f.Workspace != "" && sum.Workspace != f.Workspace {
			continue
		}
		if !hasLabels(sum.Labels, f.Labels) {
			continue
		}
		if f.ForkedFrom != "" && (sum.ForkedFrom == nil || sum.ForkedFrom.ID != f.ForkedFrom) {
			continue
		}
		out = append(out, sum)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b loop.Summary) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	if f.Offset > 0 {
		out = out[min(f.Offset, len(out)):]
	}
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// Close drops every session. Later calls fail with store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.sessions = nil
	s.leases, s.controls = nil, nil
	return nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
