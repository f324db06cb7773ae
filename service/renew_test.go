package service_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/sqlite"
)

// renewals is a SQLite store that tells how leases are renewed: the
// size of each RenewAll, and how many single Renews.
type renewals struct {
	*sqlite.Store
	mu      sync.Mutex
	batches []int
	singles int
}

func (r *renewals) RenewAll(ctx context.Context, leases []store.Lease, ttl time.Duration) ([]store.Lease, error) {
	r.mu.Lock()
	r.batches = append(r.batches, len(leases))
	r.mu.Unlock()
	return r.Store.RenewAll(ctx, leases, ttl)
}

func (r *renewals) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	r.mu.Lock()
	r.singles++
	r.mu.Unlock()
	return r.Store.Renew(ctx, l, ttl)
}

// largest is the most leases one RenewAll renewed so far.
func (r *renewals) largest() (n, singles int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.batches {
		n = max(n, b)
	}
	return n, r.singles
}

// oneAtATime is a store without RenewAll: its leases are renewed one by
// one.
type oneAtATime struct {
	store.Store
	mu      sync.Mutex
	singles int
}

func (o *oneAtATime) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	o.mu.Lock()
	o.singles++
	o.mu.Unlock()
	return o.Store.Renew(ctx, l, ttl)
}

// runHeld starts sessions sessions whose first model call waits until
// renewed says the leases were renewed, then lets them finish; each must
// complete, its lease kept throughout.
func runHeld(t *testing.T, st store.Store, sessions int, renewed func() bool) {
	t.Helper()
	release := make(chan struct{})
	svc := newService(t, st, nil, "proc-a", func(c *service.Config) {
		c.LeaseTTL = 300 * time.Millisecond // renewed every 100 ms
		c.Runner.Resolve = func(context.Context, *loop.SessionStarted, *loop.State) (*loop.Env, error) {
			m := slow(0, 0)()
			return &loop.Env{Model: model.Func(func(ctx context.Context, req *model.Request, stream model.StreamFunc) (*model.Response, error) {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return m.Generate(ctx, req, stream)
			})}, nil
		}
	})
	var started []*service.Started
	for range sessions {
		s, err := svc.Start(t.Context(), acme(all...), loop.Task{Prompt: "wait", Mode: loop.ModeSelfReasoning})
		if err != nil {
			t.Fatal(err)
		}
		started = append(started, s)
	}
	for deadline := time.Now().Add(30 * time.Second); !renewed(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("the leases of the running sessions were not renewed as expected within 30 s")
		}
	}
	close(release)
	for _, s := range started {
		got, err := s.Session.Wait(t.Context())
		if err != nil || got.Status != loop.StatusCompleted {
			t.Fatalf("session %s: %v %v", s.ID, got, err)
		}
	}
}

// The leases of the sessions a server runs are renewed together, in one
// write, not one write each.
func TestRunningSessionsLeasesRenewInOneWrite(t *testing.T) {
	const sessions = 5
	st := &renewals{Store: sharedFile(t)()}
	runHeld(t, st, sessions, func() bool {
		n, _ := st.largest()
		return n == sessions
	})
	if _, singles := st.largest(); singles != 0 {
		t.Fatalf("%d leases renewed one at a time beside RenewAll", singles)
	}
}

// A store that cannot renew many at once has its leases renewed one by one.
func TestLeasesRenewOneByOneWithoutRenewAll(t *testing.T) {
	const sessions = 3
	st := &oneAtATime{Store: sharedFile(t)()}
	runHeld(t, st, sessions, func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.singles >= 2*sessions // two rounds
	})
}
