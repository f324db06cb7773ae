package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// journalLog is a gatedLog that journals: AppendJournaled keeps a copy of
// the events (what a journal beside a database would hold) and queues
// their commit behind the gate, or refuses when refuse is set.
type journalLog struct {
	*gatedLog
	refuse bool

	mu        sync.Mutex
	journaled []loop.Event
	calls     int
}

func (l *journalLog) AppendJournaled(ctx context.Context, evs []loop.Event, done func(error)) error {
	l.mu.Lock()
	l.calls++
	if l.refuse {
		l.mu.Unlock()
		return errors.New("journal full")
	}
	l.journaled = append(l.journaled, evs...)
	l.mu.Unlock()
	l.AppendAsync(ctx, evs, done)
	return nil
}

// A session that ends on a JournalLog returns once its end is journaled,
// without waiting for the commit; the log and the journal together hold
// the whole session, and reads through the runner wait for the commit.
func TestJournaledEndReturnsBeforeItsCommit(t *testing.T) {
	e := newEnv()
	log := &journalLog{gatedLog: &gatedLog{memLog: e.log}}
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"))
	r := e.runner(t, m, []tool.Tool{idem{echoTool("read_file", &recorder{})}}, func(c *loop.Config) { c.Log = log })
	st := run(t, r, "read a")
	if st.Status != loop.StatusCompleted || st.Answer != "done" {
		t.Fatalf("state: %s %q", st.Status, st.Answer)
	}
	committed := e.log.types(st.ID)
	if log.held() == 0 || slices.Contains(committed, "session.ended") {
		t.Fatalf("Run waited for the end's commit: log %v, %d commits held", committed, log.held())
	}
	// Durable at the return: what is not committed is in the journal, and
	// the two make the whole log, in order.
	log.mu.Lock()
	j := slices.Clone(log.journaled)
	log.mu.Unlock()
	if len(j) == 0 || j[len(j)-1].Type != "session.ended" || j[0].Seq != int64(len(committed))+1 || j[len(j)-1].Seq != st.Seq {
		t.Fatalf("journal %d events (first %d, last %d %s), log %d, state at %d", len(j), j[0].Seq, j[len(j)-1].Seq, j[len(j)-1].Type, len(committed), st.Seq)
	}

	awaitHeldEnd(t, r, st.ID, log.release)
	refold(t, e, st)
	checkScript(t, m)
}

// A journal that refuses leaves the end to an ordinary commit, which Run
// waits for.
func TestRefusedJournalWaitsForTheCommit(t *testing.T) {
	e := newEnv()
	log := &journalLog{gatedLog: &gatedLog{memLog: e.log, open: true}, refuse: true}
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"))
	r := e.runner(t, m, []tool.Tool{idem{echoTool("read_file", &recorder{})}}, func(c *loop.Config) { c.Log = log })
	st := run(t, r, "read a")
	if got := e.log.types(st.ID); st.Status != loop.StatusCompleted || !slices.Contains(got, "session.ended") {
		t.Fatalf("Run returned %s before its end was committed: log %v", st.Status, got)
	}
	if log.calls != 1 {
		t.Fatalf("AppendJournaled called %d times, want once (at the end)", log.calls)
	}
	refold(t, e, st)
}

// A stepwise driver's step is durable when it returns: nothing is
// journaled for it.
func TestStepIsNotJournaled(t *testing.T) {
	e := newEnv()
	log := &journalLog{gatedLog: &gatedLog{memLog: e.log, open: true}}
	m := scripted.Replies(scripted.Text("done"))
	r := e.runner(t, m, nil, func(c *loop.Config) { c.Log = log })
	created, err := r.Create(t.Context(), loop.Task{Prompt: "say done"})
	if err != nil {
		t.Fatal(err)
	}
	s := created.ID
	for {
		st, err := r.Step(t.Context(), s, loop.StepControls{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Status.Finished() {
			break
		}
	}
	if log.calls != 0 || !slices.Contains(e.log.types(s), "session.ended") {
		t.Fatalf("journaled %d times; log %v", log.calls, e.log.types(s))
	}
}

// failJournalLog journals every end and fails its commit, as a disk that
// filled up after the journal write would.
type failJournalLog struct{ *failEndLog }

func (l failJournalLog) AppendJournaled(ctx context.Context, evs []loop.Event, done func(error)) error {
	go l.AppendAsync(ctx, evs, done)
	return nil
}

// A journaled end whose commit fails is reported by Sync, naming the
// session, and Resume finishes the session once the log works.
func TestJournaledEndFailedIsReportedAndResumable(t *testing.T) {
	e := newEnv()
	log := failJournalLog{&failEndLog{memLog: e.log}}
	log.fail.Store(true)
	slow := idem{tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(context.Context, json.RawMessage) (tool.Result, error) {
		time.Sleep(8 * time.Millisecond) // the steps before the end commit on their own
		return tool.Result{Output: "content"}, nil
	})}
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"), scripted.Text("done again"))
	r := e.runner(t, m, []tool.Tool{slow}, func(c *loop.Config) { c.Log = log })
	st := run(t, r, "read a")
	err := r.Sync(t.Context())
	if st.Status != loop.StatusCompleted || !errors.Is(err, loop.ErrNotSaved) || !strings.Contains(err.Error(), st.ID) || !strings.Contains(err.Error(), "Resume finishes it") {
		t.Fatalf("%s; Sync: %v, want ErrNotSaved naming %s and what to do", st.Status, err, st.ID)
	}
	resumeAfterFailedEnd(t, e, r, log.failEndLog, st.ID)
}

// Sync keeps the failures of at most 100 ends, each naming its session,
// and counts the rest, still as ErrNotSaved.
func TestSyncCountsFailuresPastItsBound(t *testing.T) {
	e := newEnv()
	log := failJournalLog{&failEndLog{memLog: e.log}}
	log.fail.Store(true)
	const n = 103
	var steps []scripted.Step
	for range n {
		steps = append(steps, scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"))
	}
	r := e.runner(t, scripted.Replies(steps...), []tool.Tool{idem{echoTool("read_file", &recorder{})}}, func(c *loop.Config) { c.Log = log })
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
