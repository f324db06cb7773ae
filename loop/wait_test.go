package loop_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// holdLog holds the commits of one session until release; every other
// session's commit at once (in order per session, as an AsyncLog must).
type holdLog struct {
	*memLog
	id     string
	mu     sync.Mutex
	queued []func()
	open   bool
}

func (l *holdLog) AppendAsync(ctx context.Context, evs []loop.Event, done func(error)) {
	commit := func() { done(l.memLog.Append(ctx, evs...)) }
	l.mu.Lock()
	if l.open || evs[0].SessionID != l.id {
		l.mu.Unlock()
		commit()
		return
	}
	l.queued = append(l.queued, commit)
	l.mu.Unlock()
}

// Append commits at once while nothing of the session is held, else
// behind what is (first in, first out).
func (l *holdLog) Append(ctx context.Context, evs ...loop.Event) error {
	l.mu.Lock()
	if l.open || evs[0].SessionID != l.id || len(l.queued) == 0 {
		l.mu.Unlock()
		return l.memLog.Append(ctx, evs...)
	}
	done := make(chan error, 1)
	l.queued = append(l.queued, func() { done <- l.memLog.Append(ctx, evs...) })
	l.mu.Unlock()
	return <-done
}

func (l *holdLog) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.queued {
		c()
	}
	l.queued, l.open = nil, true
}

// Wait waits for one session's end to be durable, while another's is
// still held: Sync would wait for both.
func TestWaitIsPerSession(t *testing.T) {
	e := newEnv()
	log := &holdLog{memLog: e.log, id: "s2"}
	m := scripted.Replies(scripted.Text("first"), scripted.Text("second"))
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, func(c *loop.Config) { c.Log, c.EndBehind = log, true })
	a, b := run(t, r, "one"), run(t, r, "two")
	if b.ID != log.id || b.Status != loop.StatusCompleted {
		t.Fatalf("second session %s %s, want %s completed", b.ID, b.Status, log.id)
	}
	if slices.Contains(e.log.types(b.ID), "session.ended") {
		t.Fatalf("%s's end is not held: %v", b.ID, e.log.types(b.ID))
	}

	st, err := r.Wait(t.Context(), a.ID)
	if err != nil || st.Status != loop.StatusCompleted || st.Answer != "first" {
		t.Fatalf("Wait(%s): %v", a.ID, brief(st, err))
	}
	if !slices.Contains(e.log.types(a.ID), "session.ended") {
		t.Fatalf("Wait returned before %s's end was in the log: %v", a.ID, e.log.types(a.ID))
	}
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := r.Sync(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sync with %s's end held: %v, want the deadline", b.ID, err)
	}

	waited := make(chan []string, 1)
	go func() {
		st, err := r.Wait(t.Context(), "s2")
		if err != nil || st.Status != loop.StatusCompleted || st.Answer != "second" {
			t.Errorf("Wait(s2): %v", brief(st, err))
		}
		waited <- e.log.types("s2") // as the log is when Wait returns
	}()
	log.release()
	if types := <-waited; !slices.Contains(types, "session.ended") {
		t.Fatalf("Wait(s2) returned before its end was in the log: %v", types)
	}
	checkScript(t, m)
}

// A session whose end could not be saved: Wait returns its final state
// with the failure (which Sync reports too); the log holds it unended.
func TestWaitReportsAnEndNotSaved(t *testing.T) {
	e := newEnv()
	log := &failEndLog{memLog: e.log}
	log.fail.Store(true)
	m := scripted.Replies(scripted.Text("done"), scripted.Text("done again"))
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, func(c *loop.Config) { c.Log, c.EndBehind = log, true })
	s, err := r.Start(t.Context(), loop.Task{Prompt: "say done"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(t.Context(), s.ID())
	if !errors.Is(err, loop.ErrNotSaved) || !strings.Contains(err.Error(), s.ID()) || st == nil || st.Status != loop.StatusCompleted {
		t.Fatalf("Wait: %v, want the completed state and ErrNotSaved naming %s", brief(st, err), s.ID())
	}
	if err := r.Sync(t.Context()); !errors.Is(err, loop.ErrNotSaved) {
		t.Fatalf("Sync: %v, want the failure reported there too", err)
	}
	if slices.Contains(e.log.types(s.ID()), "session.ended") {
		t.Fatalf("log: %v", e.log.types(s.ID()))
	}
	if _, err := r.Wait(t.Context(), s.ID()); !errors.Is(err, loop.ErrNotSaved) {
		t.Fatalf("Wait again: %v, want the failure until the session runs again", err)
	}
	// Resumed once the store works, it ends, and Wait says so.
	log.fail.Store(false)
	if _, err := r.Resume(t.Context(), s.ID(), ""); err != nil {
		t.Fatal(err)
	}
	st, err = r.Wait(t.Context(), s.ID())
	if err != nil || st.Status != loop.StatusCompleted || st.Answer != "done again" || !slices.Contains(e.log.types(s.ID()), "session.ended") {
		t.Fatalf("Wait after Resume: %v; log %v", brief(st, err), e.log.types(s.ID()))
	}
	checkScript(t, m)
}

// A session that does not run here is read from the log: one waiting for
// an approval, as it waits; an unknown one is not found.
func TestWaitForASessionThatDoesNotRunHere(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("write", `{"path":"a"}`))
	r := e.runner(t, m, []tool.Tool{echoTool("write", &recorder{})}, func(c *loop.Config) {
		c.Approval = func(tool.Tool) loop.Policy { return loop.PolicyAsk }
	})
	waiting := run(t, r, "write a")
	st, err := r.Wait(t.Context(), waiting.ID)
	if err != nil || st.Status != loop.StatusWaiting || len(st.PendingApprovals) != 1 || st == waiting {
		t.Fatalf("Wait: %v, want the waiting state read from the log", brief(st, err))
	}
	if _, err := r.Wait(t.Context(), "nosuch"); !errors.Is(err, loop.ErrNotFound) {
		t.Fatalf("Wait(nosuch): %v, want ErrNotFound", err)
	}
}

// brief is what a failed check shows of Wait's answer.
func brief(st *loop.State, err error) string {
	if st == nil {
		return fmt.Sprintf("no state, %v", err)
	}
	return fmt.Sprintf("%s %s (%s) %q, %d approvals pending, %v", st.ID, st.Status, st.Reason, st.Answer, len(st.PendingApprovals), err)
}
