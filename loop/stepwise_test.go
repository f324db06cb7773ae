package loop_test

import (
	"slices"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

func threeReads() *scripted.Script {
	return &scripted.Script{Name: "reads", Steps: []scripted.Step{
		scripted.Call("read_file", `{"path":"a"}`),
		scripted.Call("read_file", `{"path":"b"}`),
		scripted.Call("read_file", `{"path":"c"}`),
		scripted.Text("read a, b and c"),
	}}
}

// A session driven one step at a time records the same events, in the
// same order, as the run loop; each step is the kind NextStep said.
func TestStepwiseMatchesTheRunLoop(t *testing.T) {
	whole := newEnv()
	rw := whole.runner(t, scripted.NewCompact(threeReads()), []tool.Tool{echoTool("read_file", nil)}, nil)
	want := run(t, rw, "read three files")

	e := newEnv()
	var rec recorder
	r := e.runner(t, scripted.NewCompact(threeReads()), []tool.Tool{echoTool("read_file", &rec)}, nil)
	st, err := r.Create(t.Context(), loop.Task{Prompt: "read three files"})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []loop.StepKind
	for steps := 0; loop.NextStep(st) != loop.StepNone; steps++ {
		if steps > 50 {
			t.Fatal("the session never stopped")
		}
		kind := loop.NextStep(st)
		kinds = append(kinds, kind)
		if st, err = r.Step(t.Context(), st.ID, loop.StepControls{}); err != nil {
			t.Fatal(err)
		}
	}
	if st.Status != loop.StatusCompleted || st.Answer != want.Answer {
		t.Fatalf("stepwise: %s %q, run loop: %s %q", st.Status, st.Answer, want.Status, want.Answer)
	}
	if got, w := e.log.types(st.ID), whole.log.types(want.ID); !slices.Equal(got, w) {
		t.Fatalf("events\nstepwise %v\nrun loop %v", got, w)
	}
	if got := rec.list(); !slices.Equal(got, []string{"read_file:a", "read_file:b", "read_file:c"}) {
		t.Fatalf("tool calls %v", got)
	}
	if kinds[0] != loop.StepBookkeeping || !slices.Contains(kinds, loop.StepModel) || !slices.Contains(kinds, loop.StepTools) {
		t.Fatalf("kinds %v", kinds)
	}
	refold(t, e, st)
}

// A step taken again after it was made durable (a retried activity) does
// not call the model or run a tool again: it takes the next step.
func TestStepRetriedAfterItCommittedRepeatsNothing(t *testing.T) {
	e := newEnv()
	var rec recorder
	m := scripted.NewCompact(threeReads())
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", &rec)}, nil)
	st, _ := r.Create(t.Context(), loop.Task{Prompt: "read three files"})
	id := st.ID
	for loop.NextStep(st) != loop.StepModel {
		st, _ = r.Step(t.Context(), id, loop.StepControls{})
	}
	st, _ = r.Step(t.Context(), id, loop.StepControls{}) // the model call
	if loop.NextStep(st) != loop.StepTools {
		t.Fatalf("after the model call: %s", loop.NextStep(st))
	}
	st, _ = r.Step(t.Context(), id, loop.StepControls{}) // the tool call
	st, _ = r.Step(t.Context(), id, loop.StepControls{}) // a retry of it: takes the next step instead
	if got := rec.list(); len(got) != 1 {
		t.Fatalf("tool ran %d times: %v", len(got), got)
	}
	for loop.NextStep(st) != loop.StepNone {
		st, _ = r.Step(t.Context(), id, loop.StepControls{})
	}
	if st.Status != loop.StatusCompleted || len(rec.list()) != 3 {
		t.Fatalf("%s, tools %v", st.Status, rec.list())
	}
	checkScript(t, m)
}

// Controls held by the driver take effect as in the run loop: a pause at
// the next boundary, then a recorded resume; termination at once.
func TestStepControls(t *testing.T) {
	e := newEnv()
	r := e.runner(t, scripted.NewCompact(threeReads()), []tool.Tool{echoTool("read_file", nil)}, nil)
	st, _ := r.Create(t.Context(), loop.Task{Prompt: "read three files"})
	id := st.ID
	for steps := 0; st.Status == loop.StatusRunning; steps++ {
		var err error
		if st, err = r.Step(t.Context(), id, loop.StepControls{Pause: "lunch"}); err != nil {
			t.Fatal(err)
		}
		if steps > 5 {
			t.Fatal("never paused")
		}
	}
	if st.Status != loop.StatusPaused {
		t.Fatalf("status %s", st.Status)
	}
	if loop.NextStep(st) != loop.StepNone {
		t.Fatal("a paused session has a next step")
	}
	if st, err := r.RecordResume(t.Context(), id, "back"); err != nil || st.Status != loop.StatusRunning {
		t.Fatalf("resume: %v %v", st, err)
	}
	st, err := r.Step(t.Context(), id, loop.StepControls{Terminate: "stuck"})
	if err != nil || st.Status.Finished() == false {
		t.Fatalf("terminate: %+v %v", st, err)
	}
}
