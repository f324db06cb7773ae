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

// holdStop is a store whose commit of a session's stop (an event that
// stop matches), once readable, is reported to the session only when
// release is closed: the moment in which a client already reads the
// session as stopped while it still runs here.
type holdStop struct {
	store.Store
	stop            func(loop.Event) bool
	landed, release chan struct{}
}

func newHoldStop(stop func(loop.Event) bool) *holdStop {
	return &holdStop{Store: memory.New(), stop: stop, landed: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdStop) AppendFenced(ctx context.Context, token int64, events ...loop.Event) error {
	err := h.Store.AppendFenced(ctx, token, events...)
	for _, e := range events {
		if h.stop(e) {
			close(h.landed)
			<-h.release
		}
	}
	return err
}

func isEnd(e loop.Event) bool    { _, ok := e.Data.(*loop.SessionEnded); return ok }
func isPaused(e loop.Event) bool { _, ok := e.Data.(*loop.SessionPaused); return ok }

// A session's end is readable before the session stops running here:
// a client can read "terminated" while the runner still holds it. Deleting
// it then waits for it to let go instead of refusing with "terminate it
// first". synctest makes the moment exact.
func TestDeleteWaitsForAnEndedSessionToLetGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := newHoldStop(isEnd)
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

// The same moment for a pause: a client that reads "paused" and resumes
// gets the session resumed, not "already running", and the resumed run
// keeps its lease (the pause's run gives its own up before the resume
// takes one: otherwise it would drop the resumed run's, whose next append
// is then refused).
func TestResumeWaitsForAPausedSessionToLetGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := newHoldStop(isPaused)
		svc := newService(t, st, busy(time.Second), "")
		c := acme(all...)
		started, err := svc.Start(ctx, c, loop.Task{Prompt: "x", Mode: loop.ModeSelfReasoning, Limits: &loop.Limits{MaxIterations: busySteps + 1}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Pause(ctx, c, started.ID, "lunch"); err != nil {
			t.Fatal(err)
		}
		<-st.landed
		if got, err := svc.Get(ctx, c, started.ID); err != nil || got.Status != loop.StatusPaused {
			t.Fatalf("after its pause landed the session reads %v (%v), want paused", got.Status, err)
		}
		type result struct {
			res *service.Result
			err error
		}
		resumed := make(chan result, 1)
		go func() {
			res, err := svc.Resume(ctx, c, started.ID, "back")
			resumed <- result{res, err}
		}()
		synctest.Wait() // the resume found the session still running here
		close(st.release)
		r := <-resumed
		if r.err != nil || r.res.Session == nil {
			t.Fatalf("resuming a session that reads paused: %+v %v", r.res, r.err)
		}
		time.Sleep(3 * time.Second) // fake time: three more steps, each appended under the lease
		if _, err := svc.Terminate(ctx, c, started.ID, "failed"); err != nil {
			t.Fatal(err)
		}
		got, err := r.res.Session.Wait(ctx)
		if err != nil || got.Status != loop.StatusFailed {
			t.Fatalf("the resumed session ended %v (%v): its appends were refused", got.Status, err)
		}
	})
}
