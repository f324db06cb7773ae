package assemble_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
)

// A session on its first script skips every call it made; a script the
// session moved to later (a fork's other model, a fallback) starts at its
// own first step and, resumed, skips only the replies it gave.
func TestScriptOfASwitchedModelStartsAtItsFirstStep(t *testing.T) {
	orig, other := script(t, "o1", "o2", "o3"), script(t, "f1", "f2")
	spec := &loop.SessionStarted{Task: "t", Model: orig, Mode: loop.ModeTools, Workspace: t.TempDir()}
	now := time.Unix(0, 0)
	events := []loop.Event{loop.NewEvent("s", 1, now, spec)}
	add := func(p loop.Payload) {
		events = append(events, loop.NewEvent("s", int64(len(events)+1), now, p))
	}
	step := func(n int, text string) {
		add(&loop.IterationStarted{N: n})
		add(&loop.ModelResponded{Iteration: n, Text: text})
		add(&loop.IterationEnded{N: n})
	}
	next := func() string {
		t.Helper()
		st, err := loop.Fold(events)
		if err != nil {
			t.Fatal(err)
		}
		env, err := (&assemble.Resolver{}).Resolve(t.Context(), spec, st)
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		resp, err := env.Model.Generate(context.Background(), &model.Request{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Text
	}
	step(1, "o1")
	step(2, "o2")
	if got := next(); got != "o3" {
		t.Fatalf("the first script resumed at %q, want o3", got)
	}
	add(&loop.ModelSwitched{Iteration: 2, From: orig, To: other, Why: "forked with another model"})
	if got := next(); got != "f1" {
		t.Fatalf("the other script started at %q, want its first step f1", got)
	}
	step(3, "f1")
	if got := next(); got != "f2" {
		t.Fatalf("the other script resumed at %q, want f2", got)
	}
}
