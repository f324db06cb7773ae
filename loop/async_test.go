package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// slowAsyncLog commits in the background after a delay, first in first
// out, like a group-commit writer.
type slowAsyncLog struct {
	*memLog
	delay time.Duration
	mu    *sync.Mutex // held from AppendAsync's call, in call order
}

func (l slowAsyncLog) AppendAsync(ctx context.Context, evs []loop.Event, done func(error)) {
	ticket := make(chan struct{})
	go func() {
		l.mu.Lock()
		close(ticket)
		defer l.mu.Unlock()
		time.Sleep(l.delay)
		done(l.memLog.Append(ctx, evs...))
	}()
	<-ticket // the next append queues behind this one
}

// Append queues behind the asynchronous appends before it, as a store's
// writer does (loop.AsyncLog), and is not delayed itself.
func (l slowAsyncLog) Append(ctx context.Context, evs ...loop.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.memLog.Append(ctx, evs...)
}

// gatedLog holds every asynchronous commit until the test opens the gate,
// then commits them in order.
type gatedLog struct {
	*memLog
	mu     sync.Mutex
	queued []func()
	open   bool
}

func (l *gatedLog) AppendAsync(ctx context.Context, evs []loop.Event, done func(error)) {
	commit := func() { done(l.memLog.Append(ctx, evs...)) }
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open {
		commit() // in order: the held ones went first, under the lock
		return
	}
	l.queued = append(l.queued, commit)
}

// Append queues behind the held appends (loop.AsyncLog: first in, first
// out), so it too waits for the gate.
func (l *gatedLog) Append(ctx context.Context, evs ...loop.Event) error {
	done := make(chan error, 1)
	l.mu.Lock()
	if l.open || len(l.queued) == 0 {
		l.mu.Unlock()
		return l.memLog.Append(ctx, evs...)
	}
	l.queued = append(l.queued, func() { done <- l.memLog.Append(ctx, evs...) })
	l.mu.Unlock()
	return <-done
}

func (l *gatedLog) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.queued {
		c()
	}
	l.queued, l.open = nil, true
}

func (l *gatedLog) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queued)
}

// The critical path carries no commit wait: model calls and idempotent
// tools go on while every commit is held back; the first tool that must
// not run twice waits until everything before it is durable.
func TestCommitsOverlapUntilAToolMustNotRunTwice(t *testing.T) {
	e := newEnv()
	log := &gatedLog{memLog: e.log}
	var mu sync.Mutex
	var idemRuns int
	var sessionID string
	reads := idem{tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(context.Context, json.RawMessage) (tool.Result, error) {
		// Longer than the commit grace: what came before is handed over
		// (and held at the gate) while the read runs.
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		idemRuns++
		mu.Unlock()
		return tool.Result{Output: "content"}, nil
	})}
	writeRan := make(chan []string, 1)
	write := tool.Func(model.ToolSpec{Name: "write_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		writeRan <- e.log.types(sessionID)
		return tool.Result{Output: "written"}, nil
	})
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Call("read_file", `{"path":"b"}`),
		scripted.Call("read_file", `{"path":"c"}`), scripted.Call("write_file", `{"path":"d"}`), scripted.Text("done"))
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(reads, write), Log: log, Clock: e.clock.Now,
		NewID: func() string { return "overlap" }})
	if err != nil {
		t.Fatal(err)
	}
	sessionID = "overlap"
	sess, err := r.Start(t.Context(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	// Three model calls and three reads happen with no commit done.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := idemRuns
		mu.Unlock()
		if n == 3 && log.held() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session did not go on while commits were held: %d reads, %d commits held", n, log.held())
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-writeRan:
		t.Fatal("write_file ran while earlier events were not durable")
	case <-time.After(50 * time.Millisecond):
	}
	log.release()
	got := <-writeRan
	if got[len(got)-1] != string(loop.TypeToolStarted) {
		t.Fatalf("write_file ran before its tool.started was durable: the log ends %v", got[len(got)-3:])
	}
	st, err := sess.Wait(t.Context())
	if err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("%v %v", st.Status, err)
	}
	refold(t, e, st)
}

// With an asynchronous log, a tool still never runs before its
// tool.started (and everything before it) is durable, and every event is
// stored once, in order.
func TestAsyncLogKeepsEffectsBehindDurability(t *testing.T) {
	e := newEnv()
	log := slowAsyncLog{e.log, 2 * time.Millisecond, &sync.Mutex{}}
	var sessionID string
	check := tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
		evs, _ := log.Load(ctx, sessionID)
		last := evs[len(evs)-1]
		if last.Type != loop.TypeToolStarted {
			return tool.Result{}, fmt.Errorf("ran before tool.started was durable; log ends with %s", last.Type)
		}
		return tool.Result{Output: "ok"}, nil
	})
	var steps []scripted.Step
	for i := range 6 {
		steps = append(steps, scripted.Call("read_file", fmt.Sprintf(`{"path":"%d"}`, i)))
	}
	m := scripted.Replies(append(steps, scripted.Text("done"))...)
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(check), Log: log, Clock: e.clock.Now,
		NewID: func() string { return "async" }})
	if err != nil {
		t.Fatal(err)
	}
	sessionID = "async"
	st, err := r.Run(t.Context(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusCompleted {
		t.Fatalf("%s %s", st.Status, st.Detail)
	}
	for _, it := range st.Iterations {
		for _, c := range it.ToolCalls {
			if c.Status != loop.ToolSuccess {
				t.Fatalf("iteration %d: %s", it.N, c.Output)
			}
		}
	}
	// Every event is stored once, in order (the log checks the numbering);
	// watchers read them from the store (see package feed).
	refold(t, e, st)
}

// After a crash that lost tool.started (an idempotent tool may run before
// it is durable), the call is simply made again on recovery.
func TestRecoveryRunsCallWhoseStartWasLost(t *testing.T) {
	e := newEnv()
	runs := 0
	tl := idem{tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(context.Context, json.RawMessage) (tool.Result, error) {
		runs++
		return tool.Result{Output: "content"}, nil
	})}
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"))
	r := e.runner(t, m, []tool.Tool{tl}, nil)
	st := run(t, r, "x")
	// Keep session.started, iteration.started and model.responded only.
	e.log.truncate(st.ID, 3)
	if got := e.log.types(st.ID); got[2] != "model.responded" {
		t.Fatalf("%v", got)
	}
	m2 := scripted.Replies(scripted.Text("done again"))
	r2 := e.runner(t, m2, []tool.Tool{tl}, nil)
	s, err := r2.Resume(t.Context(), st.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	st, _ = s.Wait(t.Context())
	if runs != 2 || st.Status != loop.StatusCompleted || st.ToolCallCount != 1 || st.Iterations[0].ToolCalls[0].Output != "content" {
		t.Fatalf("runs %d %s calls %d %+v", runs, st.Status, st.ToolCallCount, st.Iterations[0].ToolCalls)
	}
	refold(t, e, st)
}

// A graceful shutdown that comes while a tool runs lets it finish: its
// result is recorded, the session pauses after it, and resuming goes on
// from there — the call made once, whole, never cut by the shutdown.
func TestShutdownLetsARunningToolFinish(t *testing.T) {
	e := newEnv()
	var writes atomic.Int32
	running, shutdown := make(chan struct{}), make(chan struct{})
	write := tool.Func(model.ToolSpec{Name: "write_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		close(running)
		<-shutdown
		if ctx.Err() != nil { // a tool that honours cancellation, as the file tools do
			return tool.Result{}, context.Cause(ctx)
		}
		writes.Add(1)
		return tool.Result{Output: "written"}, nil
	})
	m := scripted.Replies(scripted.Call("write_file", `{"path":"d"}`), scripted.Text("done"))
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(write), Log: e.log, Clock: e.clock.Now, NewID: func() string { return "shutdown" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancelCause(t.Context())
	sess, err := r.Start(ctx, loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	<-running
	stop(loop.ErrShutdown)
	close(shutdown)
	st, err := sess.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if writes.Load() != 1 {
		t.Fatalf("the write was cut by the shutdown: %d writes", writes.Load())
	}
	if st.Status != loop.StatusPaused || st.Reason != loop.ReasonShutdown {
		t.Fatalf("%s (%s), want paused (shutdown)", st.Status, st.Reason)
	}
	sess, err = r.Resume(t.Context(), "shutdown", "")
	if err != nil {
		t.Fatal(err)
	}
	if st, err = sess.Wait(t.Context()); err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("resume: %v %s", err, st.Status)
	}
	if writes.Load() != 1 {
		t.Fatalf("%d writes in all", writes.Load())
	}

	// A person's terminate still stops a running tool at once.
	e2 := newEnv()
	blocked := make(chan struct{})
	block := tool.Func(model.ToolSpec{Name: "write_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		close(blocked)
		<-ctx.Done()
		return tool.Result{}, context.Cause(ctx)
	})
	r2, _ := loop.New(loop.Config{Model: scripted.Replies(scripted.Call("write_file", `{"path":"d"}`), scripted.Text("done")), Tools: tool.MustRegistry(block), Log: e2.log, Clock: e2.clock.Now})
	ctx2, stop2 := context.WithCancelCause(t.Context())
	sess2, _ := r2.Start(ctx2, loop.Task{Prompt: "x"})
	<-blocked
	stop2(errors.New("interrupted by the user"))
	st2, err := sess2.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st2.Status != loop.StatusPaused || st2.Reason != loop.ReasonInterrupted {
		t.Fatalf("after an interrupt during a tool: %s (%s), want paused (interrupted)", st2.Status, st2.Reason)
	}
	if calls := st2.Iterations[0].ToolCalls; len(calls) != 1 || !strings.Contains(calls[0].Output, "interrupted") {
		t.Fatalf("the interrupted call is not recorded as interrupted: %+v", calls)
	}
}

// While a step runs long (here a model call that does not answer), what
// the session recorded before it reaches the log within moments, even when
// it first had to wait behind a commit still in flight: watchers are never
// left a step behind for the length of a model call.
func TestEventsReachTheLogWhileALongStepRuns(t *testing.T) {
	e := newEnv()
	log := &gatedLog{memLog: e.log}
	reads := idem{tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(context.Context, json.RawMessage) (tool.Result, error) {
		return tool.Result{Output: "content"}, nil
	})}
	answer := make(chan struct{})
	calls := 0
	m := model.Func(func(ctx context.Context, req *model.Request, _ model.StreamFunc) (*model.Response, error) {
		calls++
		if calls == 1 {
			return &model.Response{ToolCalls: []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)}}}, nil
		}
		select {
		case <-answer:
			return &model.Response{Text: "done"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(reads), Log: log, Clock: e.clock.Now,
		NewID: func() string { return "long" }})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := r.Start(t.Context(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	// Everything recorded before the second model call — the first
	// step, the read's result, the second step's start — is handed over
	// while that call hangs: held at the gate, then in the log.
	deadline := time.Now().Add(10 * time.Second)
	for log.held() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("nothing recorded before a hanging model call was handed to the log")
		}
		time.Sleep(time.Millisecond)
	}
	log.release()
	for {
		got := e.log.types("long")
		if len(got) > 0 && got[len(got)-1] == string(loop.TypeIterationStarted) && strings.Count(strings.Join(got, " "), string(loop.TypeIterationStarted)) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("while the second model call hangs the log ends %v, want the second iteration's start", got[max(0, len(got)-3):])
		}
		time.Sleep(time.Millisecond)
	}
	close(answer)
	st, err := sess.Wait(t.Context())
	if err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("%v %v", st.Status, err)
	}
	refold(t, e, st)
}

// The events before a quick tool wait to travel with the next model call's
// commit, but not for long: while a tool runs on, what was recorded before
// it (the model's answer and the tool's start) reaches the log.
func TestEventsReachTheLogWhileALongToolRuns(t *testing.T) {
	e := newEnv()
	log := slowAsyncLog{memLog: e.log, mu: new(sync.Mutex)}
	running, finish := make(chan struct{}), make(chan struct{})
	slow := idem{tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		close(running)
		select {
		case <-finish:
			return tool.Result{Output: "content"}, nil
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
	})}
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"))
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(slow), Log: log, Clock: e.clock.Now,
		NewID: func() string { return "slowtool" }})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := r.Start(t.Context(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	<-running
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := e.log.types("slowtool")
		if len(got) > 0 && got[len(got)-1] == string(loop.TypeToolStarted) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("while the tool runs the log ends %v, want the tool's start", got)
		}
		time.Sleep(time.Millisecond)
	}
	close(finish)
	st, err := sess.Wait(t.Context())
	if err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("%v %v", st.Status, err)
	}
	refold(t, e, st)
}

// checkingAsyncLog is a slowAsyncLog that checks, when each commit
// reports, that the events it was handed are still the ones it was given:
// the runner reuses a handed buffer only once its commit reported
// (AsyncLog).
type checkingAsyncLog struct {
	slowAsyncLog
	changed atomic.Int32
	buffers sync.Map // *loop.Event (a buffer's first element) → handed over before
	reused  atomic.Int32
}

func (l *checkingAsyncLog) AppendAsync(ctx context.Context, evs []loop.Event, done func(error)) {
	if _, again := l.buffers.LoadOrStore(&evs[:1][0], true); again {
		l.reused.Add(1)
	}
	given := slices.Clone(evs)
	l.slowAsyncLog.AppendAsync(ctx, evs, func(err error) {
		if !slices.EqualFunc(evs, given, func(a, b loop.Event) bool { return a.Seq == b.Seq && a.Type == b.Type }) {
			l.changed.Add(1)
		}
		done(err)
	})
}

func TestHandedEventsAreLeftAloneUntilTheirCommitReports(t *testing.T) {
	e := newEnv()
	log := &checkingAsyncLog{slowAsyncLog: slowAsyncLog{memLog: e.log, delay: 3 * time.Millisecond, mu: new(sync.Mutex)}}
	read := idem{tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		time.Sleep(time.Millisecond)
		return tool.Result{Output: "content"}, nil
	})}
	var replies []scripted.Step
	for i := range 40 {
		replies = append(replies, scripted.Call("read_file", fmt.Sprintf(`{"path":"f%d"}`, i)))
	}
	m := scripted.Replies(append(replies, scripted.Text("done"))...)
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(read), Log: log, Clock: e.clock.Now,
		NewID: func() string { return "reuse" }, Limits: loop.Limits{MaxIterations: 60}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Run(t.Context(), loop.Task{Prompt: "x"})
	if err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("%v %v", st.Status, err)
	}
	if n := log.changed.Load(); n > 0 {
		t.Fatalf("%d commits found their events changed before they reported", n)
	}
	if log.reused.Load() == 0 {
		t.Fatal("no buffer was handed over twice: the test did not exercise reuse")
	}
	refold(t, e, st)
}
