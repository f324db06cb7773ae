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

// With EndBehind, Run returns the final state while the end is still
// committing; Sync waits for it, and so does anything that reads the
// session's log through the runner.
func TestEndBehindReturnsBeforeTheEndIsDurable(t *testing.T) {
	e := newEnv()
	log := &gatedLog{memLog: e.log}
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"))
	r := e.runner(t, m, []tool.Tool{idem{echoTool("read_file", &recorder{})}}, func(c *loop.Config) {
		c.Log, c.EndBehind = log, true
	})
	st := run(t, r, "read a")
	if st.Status != loop.StatusCompleted || st.Answer != "done" {
		t.Fatalf("state: %s %q", st.Status, st.Answer)
	}
	if log.held() == 0 || slices.Contains(e.log.types(st.ID), "session.ended") {
		t.Fatalf("Run waited for the end to be durable: log %v, %d commits held", e.log.types(st.ID), log.held())
	}

	awaitHeldEnd(t, r, st.ID, log.release)
	refold(t, e, st)
	checkScript(t, m)
}

// failEndLog fails every commit that holds a session's end, as a disk that
// filled up at that moment would.
type failEndLog struct {
	*memLog
	fail atomic.Bool
}

func (l *failEndLog) AppendAsync(ctx context.Context, evs []loop.Event, done func(error)) {
	if l.fail.Load() && slices.ContainsFunc(evs, func(e loop.Event) bool { return e.Type == "session.ended" }) {
		done(errors.New("disk full"))
		return
	}
	done(l.memLog.Append(ctx, evs...))
}

// An end that fails to commit is reported by Sync, naming the session;
// the log holds the session as it was before its last step, and Resume
// finishes it — once.
func TestEndBehindFailedEndIsReportedAndResumable(t *testing.T) {
	e := newEnv()
	log := &failEndLog{memLog: e.log}
	log.fail.Store(true)
	slow := idem{tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(context.Context, json.RawMessage) (tool.Result, error) {
		// Longer than the commit grace: the steps before the end are
		// handed over (and land) on their own.
		time.Sleep(8 * time.Millisecond)
		return tool.Result{Output: "content"}, nil
	})}
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"), scripted.Text("done again"))
	r := e.runner(t, m, []tool.Tool{slow}, func(c *loop.Config) { c.Log, c.EndBehind = log, true })
	st := run(t, r, "read a")
	if st.Status != loop.StatusCompleted {
		t.Fatalf("state: %s", st.Status)
	}
	err := r.Sync(t.Context())
	if !errors.Is(err, loop.ErrNotSaved) || !strings.Contains(err.Error(), st.ID) || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Sync: %v, want ErrNotSaved naming %s and the cause", err, st.ID)
	}
	if !strings.Contains(err.Error(), "Resume finishes it") {
		t.Fatalf("Sync: %v, want it to say what to do", err)
	}
	if err := r.Sync(t.Context()); err != nil {
		t.Fatalf("second Sync reports the failure again: %v", err)
	}
	resumeAfterFailedEnd(t, e, r, log, st.ID)
}

// resumeAfterFailedEnd checks that the log of session id, whose end's
// commit failed, lacks the end, and that Resume finishes the session once
// commits work again: "done again", one session.ended.
func resumeAfterFailedEnd(t *testing.T, e *env, r *loop.Runner, log *failEndLog, id string) {
	t.Helper()
	types := e.log.types(id)
	if len(types) == 0 || slices.Contains(types, "session.ended") {
		t.Fatalf("log after the failed end: %v", types)
	}
	log.fail.Store(false)
	s, err := r.Resume(t.Context(), id, "")
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	final, err := s.Wait(t.Context())
	if err != nil || final.Status != loop.StatusCompleted || final.Answer != "done again" {
		t.Fatalf("resumed: %v %v", final, err)
	}
	if err := r.Sync(t.Context()); err != nil {
		t.Fatalf("Sync after the resume: %v", err)
	}
	if n := count(e.log.types(id), "session.ended"); n != 1 {
		t.Fatalf("session.ended %d times in the log: %v", n, e.log.types(id))
	}
	refold(t, e, final)
}

// Without an AsyncLog, or when terminated, the end is durable when Run
// returns, EndBehind or not.
func TestEndBehindNeedsAnAsyncLog(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("done"))
	r := e.runner(t, m, nil, func(c *loop.Config) { c.EndBehind = true })
	st := run(t, r, "x")
	if !slices.Contains(e.log.types(st.ID), "session.ended") {
		t.Fatalf("a plain Log's end was not durable at the return: %v", e.log.types(st.ID))
	}
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// Many sessions ending behind their returns while commits lag: reading a
// session through the runner right after its return always finds its end,
// and every log holds exactly one.
func TestEndBehindManySessions(t *testing.T) {
	e := newEnv()
	log := slowAsyncLog{memLog: e.log, delay: time.Millisecond, mu: new(sync.Mutex)}
	const n = 20
	var replies []scripted.Step
	for i := range n {
		// Distinct paths: a session given several calls is not stuck.
		replies = append(replies, scripted.Call("read_file", fmt.Sprintf(`{"path":"a%d"}`, i)), scripted.Text("done"))
	}
	var mu sync.Mutex
	ids := 0
	r, err := loop.New(loop.Config{Model: scripted.Replies(replies...), Tools: tool.MustRegistry(idem{echoTool("read_file", nil)}),
		Log: log, EndBehind: true, Clock: e.clock.Now,
		NewID: func() string { mu.Lock(); defer mu.Unlock(); ids++; return fmt.Sprintf("m%02d", ids) }})
	if err != nil {
		t.Fatal(err)
	}
	// At once: the scripted replies go to whichever session asks next, so
	// a session makes zero or more calls before its text.
	errs := make(chan error, n)
	for range n {
		go func() {
			st, err := r.Run(t.Context(), loop.Task{Prompt: "read a"})
			if err != nil {
				errs <- err
				return
			}
			if st.Status != loop.StatusCompleted {
				errs <- fmt.Errorf("session %s: %s (%s)", st.ID, st.Status, st.Detail)
				return
			}
			if _, err := r.Resume(t.Context(), st.ID, ""); !errors.Is(err, loop.ErrFinished) {
				errs <- fmt.Errorf("Resume right after session %s returned: %v, want ErrFinished", st.ID, err)
				return
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("m%02d", i)
		if c := count(e.log.types(id), "session.ended"); c != 1 {
			t.Fatalf("%s: session.ended %d times", id, c)
		}
	}
}

// awaitHeldEnd checks, with the commit of session id's end held, that
// Sync and a Resume wait for it (Resume also gives up when its context
// ends); then releases the commit and checks both see it landed.
func awaitHeldEnd(t *testing.T, r *loop.Runner, id string, release func()) {
	t.Helper()
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := r.Sync(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sync with the end held: %v, want the deadline", err)
	}
	if _, err := r.Resume(short, id, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Resume with the end held, its context ended: %v, want the deadline", err)
	}
	resumed := make(chan error, 1)
	go func() {
		_, err := r.Resume(t.Context(), id, "")
		resumed <- err
	}()
	select {
	case err := <-resumed:
		t.Fatalf("Resume did not wait for the end to land: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	if err := r.Sync(t.Context()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := <-resumed; !errors.Is(err, loop.ErrFinished) {
		t.Fatalf("Resume after the end landed: %v, want ErrFinished", err)
	}
}

// Sync keeps the failures of at most 100 ends, each naming its session,
// and counts the rest, still as ErrNotSaved.
func TestSyncCountsFailuresPastItsBound(t *testing.T) {
	e := newEnv()
	log := &failEndLog{memLog: e.log}
	log.fail.Store(true)
	const n = 103
	var steps []scripted.Step
	for range n {
		steps = append(steps, scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"))
	}
	r := e.runner(t, scripted.Replies(steps...), []tool.Tool{idem{echoTool("read_file", &recorder{})}}, func(c *loop.Config) { c.Log, c.EndBehind = log, true })
	for range n {
		if st := run(t, r, "read a"); st.Status != loop.StatusCompleted {
			t.Fatalf("session %s: %s", st.ID, st.Status)
		}
	}
	err := r.Sync(t.Context())
	if !errors.Is(err, loop.ErrNotSaved) || strings.Count(err.Error(), "disk full") != 100 || !strings.Contains(err.Error(), "and 3 more sessions whose last events were not saved") {
		t.Fatalf("Sync after %d failed ends: %v", n, err)
	}
	if err := r.Sync(t.Context()); err != nil {
		t.Fatalf("second Sync: %v", err)
	}
}
