package service_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/store/storetest"
)

// newService runs sessions with scripted replies (one script per session);
// options adjust its configuration.
func newService(t *testing.T, st store.Store, replies func() *scripted.Model, owner string, options ...func(*service.Config)) *service.Service {
	t.Helper()
	cfg := service.Config{
		Store: st, Owner: owner, PollInterval: 10 * time.Millisecond,
		Runner: loop.Config{Resolve: func(context.Context, *loop.SessionStarted, *loop.State) (*loop.Env, error) {
			return &loop.Env{Model: replies()}, nil
		}},
	}
	for _, o := range options {
		o(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// sharedFile returns a function opening another store on one SQLite file,
// as another process would.
func sharedFile(t *testing.T) func() *sqlite.Store {
	path := filepath.Join(t.TempDir(), "s.db")
	return func() *sqlite.Store {
		st, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

func slow(n int, d time.Duration) func() *scripted.Model {
	return func() *scripted.Model {
		var steps []scripted.Step
		for range n {
			steps = append(steps, scripted.Text("thinking").WithDelay(d))
		}
		return scripted.Replies(append(steps, scripted.Text("TASK_COMPLETE: done"))...)
	}
}

// busySteps is how many replies a busy model has: more than any test
// waits for.
const busySteps = 100_000

// busy is a model that keeps working until its session is stopped: each
// reply, after d, differs from the last (the same reply three times over
// is being stuck, after which a session stops to wait for a person).
func busy(d time.Duration) func() *scripted.Model {
	return func() *scripted.Model {
		steps := make([]scripted.Step, busySteps)
		for i := range steps {
			steps[i] = scripted.Text(fmt.Sprintf("step %d", i)).WithDelay(d)
		}
		return scripted.Replies(steps...)
	}
}

func acme(scopes ...service.Scope) service.Caller {
	return service.Caller{Tenant: "acme", Subject: "ann", Scopes: scopes}
}

var all = []service.Scope{service.ScopeRead, service.ScopeWrite, service.ScopeControl}

func TestTypedErrorsAndTenants(t *testing.T) {
	ctx := t.Context()
	svc := newService(t, memory.New(), slow(0, 0), "")
	started, err := svc.Start(ctx, acme(all...), loop.Task{Prompt: "x", Mode: loop.ModeSelfReasoning})
	if err != nil {
		t.Fatal(err)
	}
	st, err := started.Session.Wait(ctx)
	if err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("%v %v", st, err)
	}
	globex := service.Caller{Tenant: "globex", Scopes: all}
	cases := []struct {
		name string
		err  error
		kind error
	}{
		{"another tenant's session is not found", func() error { _, err := svc.Get(ctx, globex, started.ID); return err }(), service.ErrNotFound},
		{"an unknown session", func() error { _, err := svc.Get(ctx, acme(all...), "nope"); return err }(), service.ErrNotFound},
		{"reading without the read scope", func() error { _, err := svc.Get(ctx, acme(service.ScopeWrite), started.ID); return err }(), service.ErrForbidden},
		{"starting without the write scope", func() error { _, err := svc.Start(ctx, acme(service.ScopeRead), loop.Task{Prompt: "x"}); return err }(), service.ErrForbidden},
		{"an empty task", func() error { _, err := svc.Start(ctx, acme(all...), loop.Task{}); return err }(), service.ErrInvalid},
		{"an empty reply", func() error { _, err := svc.Reply(ctx, acme(all...), started.ID, ""); return err }(), service.ErrInvalid},
		{"controlling an ended session", func() error { _, err := svc.Pause(ctx, acme(all...), started.ID, ""); return err }(), service.ErrConflict},
		{"a decision without a call", func() error { _, err := svc.Decide(ctx, acme(all...), started.ID, loop.ApprovalDecision{}); return err }(), service.ErrInvalid},
		{"another tenant terminating", func() error { _, err := svc.Terminate(ctx, globex, started.ID, ""); return err }(), service.ErrNotFound},
	}
	for _, c := range cases {
		if service.KindOf(c.err) != c.kind {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.kind)
		}
	}
	list, err := svc.List(ctx, globex, store.Filter{})
	if err != nil || len(list) != 0 {
		t.Fatalf("globex sees %d sessions", len(list))
	}
	list, _ = svc.List(ctx, acme(all...), store.Filter{})
	if len(list) != 1 || list[0].Tenant != "acme" {
		t.Fatalf("acme's list: %+v", list)
	}
	if err := svc.Delete(ctx, globex, started.ID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("globex deleting acme's session: %v", err)
	}
	if err := svc.Delete(ctx, acme(all...), started.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, acme(all...), started.ID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// Two services on one database are two processes: controls for a session
// one of them runs go through the store to it.
func TestControlsReachTheOwningProcess(t *testing.T) {
	ctx := t.Context()
	open := sharedFile(t)
	owner := newService(t, open(), busy(20*time.Millisecond), "owner")
	other := newService(t, open(), slow(0, 0), "other")
	started, err := owner.Start(ctx, acme(all...), loop.Task{Prompt: "go on", Mode: loop.ModeSelfReasoning, Limits: &loop.Limits{MaxIterations: busySteps + 1}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := other.Reply(ctx, acme(all...), started.ID, "consider the edge cases")
	if err != nil || res.Request == nil {
		t.Fatalf("reply from the other process: %+v %v", res, err)
	}
	ctl, _, err := other.WaitControl(ctx, acme(all...), res.Request.ID)
	if err != nil || !ctl.Done || !strings.Contains(ctl.Outcome, "next step") {
		t.Fatalf("reply request: %+v %v", ctl, err)
	}
	if err := other.Delete(ctx, acme(all...), started.ID); !errors.Is(err, service.ErrConflict) {
		t.Fatalf("deleting a session another process runs: %v", err)
	}
	res, err = other.Terminate(ctx, acme(all...), started.ID, "failed")
	if err != nil || res.Request == nil {
		t.Fatalf("terminate: %+v %v", res, err)
	}
	st, err := started.Session.Wait(ctx)
	if err != nil || st.Status != loop.StatusFailed || st.Reason != loop.ReasonFailedByUser {
		t.Fatalf("owner's session ended %v (%v) %v", st.Status, st.Reason, err)
	}
	found := false
	for _, m := range st.Conversation {
		found = found || m.Content == "consider the edge cases"
	}
	if !found {
		t.Fatal("the reply never reached the conversation")
	}
}

// A process that lost its lease records nothing more: its next append is
// refused and the session's log stays the new owner's.
func TestLostLeaseRecordsNothing(t *testing.T) {
	ctx := t.Context()
	clock := storetest.NewClock()
	st := memory.New(memory.WithClock(clock.Now))
	svc := newService(t, st, slow(50, 20*time.Millisecond), "first")
	started, err := svc.Start(ctx, acme(all...), loop.Task{Prompt: "go", Mode: loop.ModeSelfReasoning, Limits: &loop.Limits{MaxIterations: 100}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	clock.Advance(time.Hour) // the first owner stalled past its lease
	if _, err := st.Acquire(ctx, started.ID, "second", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = started.Session.Wait(ctx)
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the stale owner went on: %v", err)
	}
}

// A watcher sees an iteration start while its model call is still under
// way (the call never returns until the watcher has seen it).
func TestWatchersSeeTheIterationStartDuringTheCall(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	seen := make(chan struct{})
	slowModel := model.Func(func(ctx context.Context, _ *model.Request, _ model.StreamFunc) (*model.Response, error) {
		select {
		case <-seen:
			return &model.Response{Text: "TASK_COMPLETE: done", FinishReason: model.FinishStop}, nil
		case <-time.After(10 * time.Second):
			return nil, errors.New("no watcher saw iteration.started while the model was working")
		}
	})
	svc, err := service.New(service.Config{Store: st, Runner: loop.Config{Model: slowModel}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	started, err := svc.Start(ctx, acme(all...), loop.Task{Prompt: "x", Mode: loop.ModeSelfReasoning})
	if err != nil {
		t.Fatal(err)
	}
	events, err := svc.Events(ctx, acme(all...), started.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == loop.TypeIterationStarted {
			close(seen)
			break
		}
	}
	final, err := started.Session.Wait(ctx)
	if err != nil || final.Status != loop.StatusCompleted {
		t.Fatalf("%v %v", final, err)
	}
}

// A control stored for a session just as its owner let it go — a resume
// sent through another server while the session paused — is not left
// pending for ever: a process that takes over controls (a server) owns the
// session and applies it; one that does not (a CLI command, or the owner
// here) leaves it alone.
func TestAControlTheOwnerLeftIsTakenOver(t *testing.T) {
	ctx := t.Context()
	open := sharedFile(t)
	owner := newService(t, open(), slow(20, 5*time.Millisecond), "owner")
	started, err := owner.Start(ctx, acme(all...), loop.Task{Prompt: "go on", Mode: loop.ModeSelfReasoning, Limits: &loop.Limits{MaxIterations: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Pause(ctx, acme(all...), started.ID, "checking"); err != nil {
		t.Fatal(err)
	}
	if st, err := started.Session.Wait(ctx); err != nil || st.Status != loop.StatusPaused {
		t.Fatalf("the session did not pause: %v %v", st.Status, err)
	}
	// The request another server stored while the owner still held the
	// session.
	st := open()
	req, err := st.RequestControl(ctx, store.Control{SessionID: started.ID, Kind: store.ControlResume, Subject: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	newService(t, open(), slow(0, 0), "cli")
	time.Sleep(150 * time.Millisecond) // 15 poll intervals of the owner and the bystander
	if ctl, err := st.Control(ctx, req.ID); err != nil || ctl.Done {
		t.Fatalf("a process that does not take over controls applied it: %+v %v", ctl, err)
	}

	server := newService(t, open(), slow(0, 0), "server", func(c *service.Config) { c.TakeOverControls = true })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ctl, err := st.Control(ctx, req.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ctl.Done {
			if !strings.Contains(ctl.Outcome, "applied by another process") {
				t.Fatalf("outcome: %q", ctl.Outcome)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the resume request is still pending 10 s after a server that takes over controls started")
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, err := server.Get(ctx, acme(all...), started.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == loop.StatusCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed session is %s, not completed", got.Status)
		}
	}
}

// A session started here is owned here from its first event: its lease is
// taken with session.started (one commit), another process cannot start
// it again, and a start refused for a lease another process holds records
// nothing.
func TestStartTakesTheLeaseWithTheStart(t *testing.T) {
	ctx := t.Context()
	open := sharedFile(t)
	a := newService(t, open(), busy(5*time.Millisecond), "proc-a")
	bStore := open()
	b := newService(t, bStore, busy(5*time.Millisecond), "proc-b")
	task := func(id string) loop.Task {
		return loop.Task{ID: id, Prompt: "go", Mode: loop.ModeSelfReasoning, Limits: &loop.Limits{MaxIterations: busySteps}}
	}

	started, err := a.Start(ctx, acme(all...), task("owned"))
	if err != nil {
		t.Fatal(err)
	}
	held, err := bStore.LeasesOf(ctx, "owned")
	if err != nil || held["owned"].Owner != "proc-a" {
		t.Fatalf("lease of a started session: %+v %v, want proc-a's", held, err)
	}
	if _, err := b.Start(ctx, acme(all...), task("owned")); !errors.Is(err, service.ErrConflict) {
		t.Fatalf("another process starting the same ID: %v, want ErrConflict", err)
	}

	if _, err := bStore.Acquire(ctx, "taken", "proc-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(ctx, acme(all...), task("taken")); !errors.Is(err, service.ErrConflict) || !strings.Contains(err.Error(), "runs elsewhere") {
		t.Fatalf("starting an ID whose lease another process holds: %v, want ErrConflict (runs elsewhere)", err)
	}
	if _, err := bStore.Load(ctx, "taken"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused start left events: %v", err)
	}

	// The session started first still runs under its lease and stops cleanly.
	if _, err := a.Terminate(ctx, acme(all...), started.ID, "done"); err != nil {
		t.Fatal(err)
	}
	st, err := started.Session.Wait(ctx)
	if err != nil || st.Status != loop.StatusTerminated {
		t.Fatalf("after terminate: %v %v", st.Status, err)
	}
}
