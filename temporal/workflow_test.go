package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/temporal"
	"github.com/agentloop/agentloop/tool"
)

// counter is a tool that counts its runs by argument.
type counter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *counter) tool() tool.Tool {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	return tool.Func(model.ToolSpec{Name: "touch", Description: "touches a file", Parameters: schema},
		func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			var a struct{ Path string }
			json.Unmarshal(args, &a)
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.runs == nil {
				c.runs = map[string]int{}
			}
			c.runs[a.Path]++
			return tool.Result{Output: "touched " + a.Path}, nil
		})
}

func script(n int) *scripted.Script {
	s := &scripted.Script{Name: "touches"}
	for i := range n {
		s.Steps = append(s.Steps, scripted.Call("touch", fmt.Sprintf(`{"path":"f%d"}`, i)))
	}
	s.Steps = append(s.Steps, scripted.Text(fmt.Sprintf("touched %d files", n)))
	return s
}

type fixture struct {
	st     *memory.Store
	runner *loop.Runner
	tools  *counter
	model  *scripted.Model
	id     string
	env    *testsuite.TestWorkflowEnvironment
}

func newFixture(t *testing.T, steps int) *fixture {
	t.Helper()
	return newScriptFixture(t, script(steps))
}

func newScriptFixture(t *testing.T, sc *scripted.Script) *fixture {
	t.Helper()
	f := &fixture{st: memory.New(), tools: &counter{}, model: scripted.NewCompact(sc)}
	reg := tool.MustRegistry(f.tools.tool())
	r, err := loop.New(loop.Config{Model: f.model, ModelName: "scripted", Tools: reg, Log: f.st})
	if err != nil {
		t.Fatal(err)
	}
	f.runner = r
	st, err := r.Create(t.Context(), loop.Task{Prompt: "touch the files", Limits: &loop.Limits{MaxIterations: 50}})
	if err != nil {
		t.Fatal(err)
	}
	f.id = st.ID
	var s testsuite.WorkflowTestSuite
	f.env = s.NewTestWorkflowEnvironment()
	temporal.Register(f.env, &temporal.Activities{Runner: r})
	return f
}

func (f *fixture) final(t *testing.T) *loop.State {
	t.Helper()
	evs, err := f.st.Load(context.Background(), f.id)
	if err != nil {
		t.Fatal(err)
	}
	st, err := loop.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// ran is how many tool calls have run.
func (f *fixture) ran() int {
	f.tools.mu.Lock()
	defer f.tools.mu.Unlock()
	n := 0
	for _, k := range f.tools.runs {
		n += k
	}
	return n
}

func (f *fixture) eachToolOnce(t *testing.T, n int) {
	t.Helper()
	f.tools.mu.Lock()
	defer f.tools.mu.Unlock()
	if len(f.tools.runs) != n {
		t.Fatalf("%d distinct tool calls ran, want %d: %v", len(f.tools.runs), n, f.tools.runs)
	}
	for p, k := range f.tools.runs {
		if k != 1 {
			t.Fatalf("touch %s ran %d times", p, k)
		}
	}
}

func TestWorkflowRunsASessionToTheEnd(t *testing.T) {
	f := newFixture(t, 4)
	f.env.ExecuteWorkflow(temporal.WorkflowName, temporal.Input{SessionID: f.id})
	if !f.env.IsWorkflowCompleted() || f.env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", f.env.GetWorkflowError())
	}
	var out temporal.Summary
	if err := f.env.GetWorkflowResult(&out); err != nil || out.Status != loop.StatusCompleted {
		t.Fatalf("result %+v %v", out, err)
	}
	if st := f.final(t); st.Status != loop.StatusCompleted || st.Answer != "touched 4 files" {
		t.Fatalf("session %s %q", st.Status, st.Answer)
	}
	f.eachToolOnce(t, 4)
}

// Pause and resume are signals; the state is a query.
func TestWorkflowPausesAndResumesOnSignals(t *testing.T) {
	f := newFixture(t, 6)
	f.env.RegisterDelayedCallback(func() {
		f.env.SignalWorkflow(temporal.ControlSignal, temporal.Control{Kind: temporal.ControlPause, Text: "lunch"})
	}, time.Nanosecond)
	var paused temporal.Summary
	f.env.RegisterDelayedCallback(func() {
		v, err := f.env.QueryWorkflow(temporal.StateQuery)
		if err != nil {
			t.Errorf("query: %v", err)
			return
		}
		v.Get(&paused)
		f.env.SignalWorkflow(temporal.ControlSignal, temporal.Control{Kind: temporal.ControlResume, Text: "back"})
	}, time.Hour)
	f.env.ExecuteWorkflow(temporal.WorkflowName, temporal.Input{SessionID: f.id})
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if paused.Status != loop.StatusPaused {
		t.Fatalf("queried while paused: %+v", paused)
	}
	st := f.final(t)
	if st.Status != loop.StatusCompleted {
		t.Fatalf("session %s", st.Status)
	}
	f.eachToolOnce(t, 6)
}

func TestWorkflowTerminates(t *testing.T) {
	f := newFixture(t, 6)
	f.env.RegisterDelayedCallback(func() {
		f.env.SignalWorkflow(temporal.ControlSignal, temporal.Control{Kind: temporal.ControlTerminate, Text: "different_approach"})
	}, time.Nanosecond)
	f.env.ExecuteWorkflow(temporal.WorkflowName, temporal.Input{SessionID: f.id})
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if st := f.final(t); !st.Status.Finished() || st.Status == loop.StatusCompleted {
		t.Fatalf("session %s %s", st.Status, st.Reason)
	}
}

// A long session continues as new, carrying where it was.
func TestWorkflowContinuesAsNew(t *testing.T) {
	f := newFixture(t, 6)
	f.env.ExecuteWorkflow(temporal.WorkflowName, temporal.Input{SessionID: f.id, StepsPerRun: 4})
	var can *workflow.ContinueAsNewError
	if err := f.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("after 4 steps: %v, want continue-as-new", err)
	}
	// The next run, as Temporal would start it, finishes the session.
	var in temporal.Input
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.Last == nil || in.Last.Status != loop.StatusRunning || in.SessionID != f.id {
		t.Fatalf("carried input %+v", in)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	temporal.Register(env, &temporal.Activities{Runner: f.runner})
	in.StepsPerRun = 1000
	env.ExecuteWorkflow(temporal.WorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if st := f.final(t); st.Status != loop.StatusCompleted {
		t.Fatalf("session %s", st.Status)
	}
	f.eachToolOnce(t, 6)
}

// An activity retried after it committed (a worker that died before
// reporting) repeats no model call and no tool run.
func TestRetriedStepRepeatsNothing(t *testing.T) {
	f := newFixture(t, 3)
	f.env.ExecuteWorkflow(temporal.WorkflowName, temporal.Input{SessionID: f.id})
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// Every step again, as retries after each commit would: nothing runs.
	for range 5 {
		if _, err := (&temporal.Activities{Runner: f.runner}).Step(context.Background(), f.id, loop.StepControls{}); err != nil {
			t.Fatal(err)
		}
	}
	f.eachToolOnce(t, 3)
	if err := f.model.Err(); err != nil {
		t.Fatalf("script: %v", err)
	}
}
