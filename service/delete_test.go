package service_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
)

// holdEnd is a store whose commit of a session's end, once readable, is
// reported to the session only when release is closed: the moment in
// which a client already reads the session as ended while it still runs
// here.
type holdEnd struct {
	store.Store
	landed, release chan struct{}
}

func (h *holdEnd) AppendFenced(ctx context.Context, token int64, events ...loop.Event) error {
	err := h.Store.AppendFenced(ctx, token, events...)
	for _, e := range events {
		if _, ok := e.Data.(*loop.SessionEnded); ok {
			close(h.landed)
			<-h.release
		}
	}
	return err
}

// A session's end is readable before the session stops running here:
// a client can read "terminated" while the runner still holds it. Deleting
// it then waits for it to let go instead of refusing with "terminate it
// first". synctest makes the moment exact.
func TestDeleteWaitsForAnEndedSessionToLetGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := &holdEnd{Store: memory.New(), landed: make(chan struct{}), release: make(chan struct{})}
		svc := newService(t, st, slow(1, time.Hour), "")
		c := acme(all...)
		started, err := svc.Start(ctx, c, loop.Task{Prompt: "x", Mode: loop.ModeSelfReasoning})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Terminate(ctx, c, started.ID, "different_approach"); err != nil {
			t.Fatal(err)
		}
		<-st.landed
		if got, err := svc.Get(ctx, c, started.ID); err != nil || got.Status != loop.StatusTerminated {
			t.Fatalf("after its end landed the session reads %v (%v), want terminated", got.Status, err)
		}
		deleted := make(chan error, 1)
		go func() { deleted <- svc.Delete(ctx, c, started.ID) }()
		synctest.Wait() // the delete found the session still running here
		close(st.release)
		if err := <-deleted; err != nil {
			t.Fatalf("deleting a session that reads terminated: %v", err)
		}
		if _, err := svc.Get(ctx, c, started.ID); !errors.Is(err, service.ErrNotFound) {
			t.Fatalf("after delete: %v, want not found", err)
		}
	})
}
