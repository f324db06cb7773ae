package loop_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// resolverFor resolves two model specs to two scripts and counts the
// environments opened and closed.
type resolverFor struct {
	mu      sync.Mutex
	scripts map[string]func(played int) *scripted.Model
	tools   []tool.Tool
	opened  int
	closed  int
	ended   int
	seen    []string
}

func (rv *resolverFor) resolve(_ context.Context, spec *loop.SessionStarted, st *loop.State) (*loop.Env, error) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	mk, ok := rv.scripts[spec.Model]
	if !ok {
		return nil, errors.New("unknown model " + spec.Model)
	}
	reg, err := tool.NewRegistry(rv.tools...)
	if err != nil {
		return nil, err
	}
	rv.opened++
	rv.seen = append(rv.seen, spec.Model+"@"+spec.Workspace)
	return &loop.Env{Model: mk(st.InteractionCount), Tools: reg, SystemPrompt: "prompt for " + spec.Model,
		Close: func() { rv.mu.Lock(); rv.closed++; rv.mu.Unlock() },
		Ended: func() { rv.mu.Lock(); rv.ended++; rv.mu.Unlock() }}, nil
}

func TestOneRunnerServesSessionsWithDifferentSpecs(t *testing.T) {
	e := newEnv()
	rec := &recorder{}
	rv := &resolverFor{tools: []tool.Tool{echoTool("read", rec)}, scripts: map[string]func(int) *scripted.Model{
		"a/model": func(int) *scripted.Model { return scripted.Replies(scripted.Text("answer from a")) },
		"b/model": func(int) *scripted.Model {
			return scripted.Replies(scripted.Call("read", `{"path":"x"}`), scripted.Text("answer from b"))
		},
	}}
	r := e.runner(t, nil, nil, func(c *loop.Config) { c.Model, c.Resolve = nil, rv.resolve })
	a, err := r.Run(t.Context(), loop.Task{Prompt: "task a", Model: "a/model", Workspace: "/wa", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Run(t.Context(), loop.Task{Prompt: "task b", Model: "b/model", Workspace: "/wb"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Answer != "answer from a" || b.Answer != "answer from b" {
		t.Fatalf("answers %q / %q", a.Answer, b.Answer)
	}
	if a.SystemPrompt != "prompt for a/model" || a.Model != "a/model" || strings.Join(a.Tools, ",") != "read" {
		t.Fatalf("session a recorded prompt %q model %q tools %v", a.SystemPrompt, a.Model, a.Tools)
	}
	evs, _ := e.log.Load(t.Context(), a.ID)
	if got := evs[0].Data.(*loop.SessionStarted).Tenant; got != "acme" {
		t.Fatalf("tenant recorded %q", got)
	}
	if rv.opened != 2 || rv.closed != 2 {
		t.Fatalf("opened %d, closed %d environments; want 2 and 2", rv.opened, rv.closed)
	}
	if got := strings.Join(rv.seen, " "); got != "a/model@/wa b/model@/wb" {
		t.Fatalf("resolved %s", got)
	}
}

func TestResumeResolvesTheRecordedSpec(t *testing.T) {
	e := newEnv()
	rv := &resolverFor{scripts: map[string]func(int) *scripted.Model{
		"a/model": func(played int) *scripted.Model {
			m := scripted.Replies(scripted.Text("thinking"), scripted.Text("TASK_COMPLETE: done"))
			m.Skip(played)
			return m
		},
	}}
	r := e.runner(t, nil, nil, func(c *loop.Config) { c.Model, c.Resolve = nil, rv.resolve; c.Mode = loop.ModeSelfReasoning })
	st, err := r.Run(t.Context(), loop.Task{Prompt: "think", Model: "a/model", Limits: &loop.Limits{MaxIterations: 3}})
	if err != nil {
		t.Fatal(err)
	}
	_ = st
	// Cut the log after the first reply, as a crash would, and resume in
	// a fresh runner: the spec resolves again, skipping the played reply.
	evs, _ := e.log.Load(t.Context(), st.ID)
	keep := 0
	for i, ev := range evs {
		if ev.Type == loop.TypeModelResponded {
			keep = i + 1
			break
		}
	}
	e.log.truncate(st.ID, keep)
	r2 := e.runner(t, nil, nil, func(c *loop.Config) { c.Model, c.Resolve = nil, rv.resolve })
	s, err := r2.Resume(t.Context(), st.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	final, err := s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != loop.StatusCompleted || final.Answer != "done" {
		t.Fatalf("resumed session: %s %s %q", final.Status, final.Reason, final.Answer)
	}
	if rv.opened != 2 || rv.closed != 2 {
		t.Fatalf("opened %d, closed %d; want 2 and 2", rv.opened, rv.closed)
	}
}

func TestUnresolvableSpecRecordsNothing(t *testing.T) {
	e := newEnv()
	rv := &resolverFor{scripts: map[string]func(int) *scripted.Model{}}
	r := e.runner(t, nil, nil, func(c *loop.Config) { c.Model, c.Resolve = nil, rv.resolve })
	_, err := r.Run(t.Context(), loop.Task{Prompt: "x", Model: "missing/model"})
	if err == nil || !strings.Contains(err.Error(), "unknown model missing/model") {
		t.Fatalf("err = %v", err)
	}
	if len(e.log.events) != 0 {
		t.Fatalf("a refused session left %d logs", len(e.log.events))
	}
	// A runner with neither Model nor Resolve records and reads sessions;
	// one it would run is refused before anything is recorded.
	bare, err := loop.New(loop.Config{Log: e.log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Run(t.Context(), loop.Task{Prompt: "x"}); !errors.Is(err, loop.ErrNoModel) {
		t.Fatalf("a session on a runner without a model: %v", err)
	}
	if len(e.log.events) != 0 {
		t.Fatalf("a session without a model left %d logs", len(e.log.events))
	}
}

// A session that stops without ending (waiting for a person here) keeps
// what only its processes use; once it ends, Ended lets it go, once.
func TestEndedOnlyWhenTheSessionEnds(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Call("read_file", `{"path":"x"}`), scripted.Call("read_file", `{"path":"x"}`), scripted.Call("read_file", `{"path":"x"}`),
		scripted.Call("read_file", `{"path":"x"}`), scripted.Call("read_file", `{"path":"x"}`),
		scripted.Text("done"),
	)
	rv := &resolverFor{tools: []tool.Tool{echoTool("read_file", nil)}, scripts: map[string]func(int) *scripted.Model{
		"a/model": func(int) *scripted.Model { return m },
	}}
	r := e.runner(t, nil, nil, func(c *loop.Config) { c.Model, c.Resolve = nil, rv.resolve })
	st, err := r.Run(t.Context(), loop.Task{Prompt: "x", Model: "a/model"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusWaiting {
		t.Fatalf("the session is %s, want it waiting (stuck)", st.Status)
	}
	if rv.closed != 1 || rv.ended != 0 {
		t.Fatalf("a waiting session: %d closed, %d ended; want 1 and 0", rv.closed, rv.ended)
	}
	s, err := r.Reply(t.Context(), st.ID, "go on")
	if err != nil {
		t.Fatal(err)
	}
	if st, _ = s.Wait(t.Context()); st.Status != loop.StatusCompleted {
		t.Fatalf("the session is %s after the reply", st.Status)
	}
	if rv.closed != 2 || rv.ended != 1 {
		t.Fatalf("an ended session: %d closed, %d ended; want 2 and 1", rv.closed, rv.ended)
	}
}

// failEndCommitLog fails every commit that holds a session's end, as a
// disk that filled up at that moment would.
type failEndCommitLog struct{ *memLog }

func (l failEndCommitLog) Append(ctx context.Context, evs ...loop.Event) error {
	for _, e := range evs {
		if e.Type == loop.TypeSessionEnded {
			return errors.New("disk full")
		}
	}
	return l.memLog.Append(ctx, evs...)
}

// An end that was not saved leaves the session to be resumed: what its
// processes use stays.
func TestEndedNotWhenTheEndWasNotSaved(t *testing.T) {
	e := newEnv()
	rv := &resolverFor{scripts: map[string]func(int) *scripted.Model{
		"a/model": func(int) *scripted.Model { return scripted.Replies(scripted.Text("done")) },
	}}
	r := e.runner(t, nil, nil, func(c *loop.Config) { c.Model, c.Resolve, c.Log = nil, rv.resolve, failEndCommitLog{e.log} })
	st, err := r.Run(t.Context(), loop.Task{Prompt: "x", Model: "a/model"})
	if err == nil || !errors.Is(err, loop.ErrNotSaved) {
		t.Fatalf("Run: %v, want the end not saved", err)
	}
	if !st.Status.Finished() {
		t.Fatalf("the session is %s in memory, want it ended", st.Status)
	}
	if rv.closed != 1 || rv.ended != 0 {
		t.Fatalf("%d closed, %d ended; want 1 and 0", rv.closed, rv.ended)
	}
}
