package service_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/sqlite"
)

// gatedStart is a store that commits behind a session's steps whose
// commits that start a session and take its lease wait for gate, then fail
// with fail when it is set.
type gatedStart struct {
	*sqlite.Store
	gate chan struct{}
	fail error
}

func (g gatedStart) AppendAcquiring(ctx context.Context, owner string, ttl time.Duration, events ...loop.Event) (store.Lease, error) {
	<-g.gate
	if g.fail != nil {
		return store.Lease{}, g.fail
	}
	return g.Store.AppendAcquiring(ctx, owner, ttl, events...)
}

// startWithGate starts a session with an ID the service makes, on a store
// whose start commit waits until the session's first model call was made.
// It returns the outcome of Start and the store.
func startWithGate(t *testing.T, fail error) (*service.Started, error, gatedStart) {
	t.Helper()
	st := gatedStart{Store: sharedFile(t)(), gate: make(chan struct{}), fail: fail}
	called := make(chan struct{}, 1)
	svc := newService(t, st, nil, "proc-a", func(c *service.Config) {
		replies := slow(0, 0)
		c.Runner.Resolve = func(context.Context, *loop.SessionStarted, *loop.State) (*loop.Env, error) {
			m := replies()
			return &loop.Env{Model: model.Func(func(ctx context.Context, req *model.Request, stream model.StreamFunc) (*model.Response, error) {
				select {
				case called <- struct{}{}:
				default:
				}
				return m.Generate(ctx, req, stream)
			})}, nil
		}
	})
	type outcome struct {
		started *service.Started
		err     error
	}
	done := make(chan outcome, 1)
	go func() {
		s, err := svc.Start(context.Background(), acme(all...), loop.Task{Prompt: "go", Mode: loop.ModeSelfReasoning})
		done <- outcome{s, err}
	}()
	select {
	case <-called:
	case o := <-done:
		close(st.gate)
		t.Fatalf("Start returned (%v) before the start could commit", o.err)
	case <-time.After(20 * time.Second):
		close(st.gate)
		t.Fatal("the session's first model call waited for its start's commit")
	}
	select {
	case o := <-done:
		t.Fatalf("Start returned (%v) before its session's start was committed", o.err)
	default:
	}
	close(st.gate)
	o := <-done
	return o.started, o.err, st
}

// A session whose ID the service made calls its model while its start
// commits, and Start returns once the start is durable.
func TestAFreshSessionsFirstCallOverlapsItsStart(t *testing.T) {
	started, err, st := startWithGate(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, started.Session); s.Status != loop.StatusCompleted {
		t.Fatalf("session ended %s (%s)", s.Status, s.Detail)
	}
	evs, err := st.Load(t.Context(), started.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
	}
	if evs[0].Type != "session.started" || evs[len(evs)-1].Type != "session.ended" {
		t.Fatalf("log from %s to %s", evs[0].Type, evs[len(evs)-1].Type)
	}
}

// A start whose commit fails is refused, and the session it began records
// nothing: its later events are not written without the lease.
func TestAFreshSessionWhoseStartFailsRecordsNothing(t *testing.T) {
	_, err, st := startWithGate(t, fmt.Errorf("lease: %w", store.ErrLeaseHeld))
	if !errors.Is(err, service.ErrConflict) {
		t.Fatalf("Start: %v, want ErrConflict", err)
	}
	if all, err := st.List(t.Context(), store.Filter{}); err != nil || len(all) != 0 {
		t.Fatalf("sessions stored after a failed start: %+v %v", all, err)
	}
}
