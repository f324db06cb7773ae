package loop_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/session"
)

// eightSteps is a session of eight steps that makes a plan, remembers
// things and calls tools, then answers.
func eightSteps() *scripted.Model {
	return scripted.Replies(
		scripted.Call("update_plan", `{"action":"create","goal":"g","steps":["a"]}`),
		scripted.Call("remember", `{"key":"k","value":"one"}`),
		scripted.Call("write", `{"path":"three"}`),
		scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"completed"}`),
		scripted.Call("remember", `{"key":"k","value":"five"}`),
		scripted.Call("write", `{"path":"six"}`),
		scripted.Calls(scripted.Call("remember", `{"key":"other","value":"seven"}`), scripted.Call("update_plan", `{"action":"complete"}`)),
		scripted.Text("done at eight"),
	)
}

// finishPlan completes the plan eightSteps makes, then answers.
func finishPlan(answer string) []scripted.Step {
	return []scripted.Step{
		scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"completed"}`),
		scripted.Call("update_plan", `{"action":"complete"}`),
		scripted.Text(answer),
	}
}

// A rewind to step 3 of an ended session sets steps 4–8 aside (kept in
// the log and marked), and the model's next request holds exactly the
// conversation of steps 1–3 plus the new message; plan, memory, counters
// and the current step are those of step 3's end.
func TestRewindGoesOnFromTheEndOfTheStep(t *testing.T) {
	e := newEnv()
	ctx := t.Context()
	tools := append(session.Tools(), echoTool("write", nil))
	st := run(t, e.runner(t, eightSteps(), tools, nil), "eight steps")
	if st.Status != loop.StatusCompleted || st.CurrentIteration != 8 {
		t.Fatalf("the session ran to %s at step %d (%s), want completed at 8", st.Status, st.CurrentIteration, st.Detail)
	}
	before, _ := e.log.Load(ctx, st.ID)
	end, ok := loop.LiveStepEnd(before, 3)
	if !ok {
		t.Fatal("no end of step 3 in the log")
	}
	at3, err := loop.Fold(before[:end])
	if err != nil {
		t.Fatal(err)
	}

	m := scripted.Replies(finishPlan("redone")...)
	r := e.runner(t, m, tools, nil)
	s, err := r.Rewind(ctx, st.ID, loop.RewindTo{At: 3, Checkpoint: "", Message: "try another way"})
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != loop.StatusCompleted || after.Answer != "redone" {
		t.Fatalf("after the rewind the session is %s with answer %q", after.Status, after.Answer)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model was called %d times after the rewind, want 3", len(reqs))
	}
	want := append(append([]model.Message(nil), at3.Conversation...), model.Message{Role: model.RoleUser, Content: "try another way"})
	if got := reqs[0].Messages; !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("the model's request after the rewind:\n%s\nwant the conversation of steps 1-3 and the message:\n%s", g, w)
	}

	back := refold(t, e, after)
	var steps []int
	var rewound []int
	for _, it := range back.Iterations {
		steps = append(steps, it.N)
		if it.Rewound {
			rewound = append(rewound, it.N)
		}
	}
	if !reflect.DeepEqual(steps, []int{1, 2, 3, 4, 5, 6, 7, 8, 4, 5, 6}) || !reflect.DeepEqual(rewound, []int{4, 5, 6, 7, 8}) {
		t.Fatalf("iterations %v with %v rewound; want 1-8 then 4-6, with the first 4-8 rewound", steps, rewound)
	}
	if len(back.Rewinds.Rewinds) != 1 || !reflect.DeepEqual(back.Rewinds.Rewinds[0].Steps, []int{4, 5, 6, 7, 8}) {
		t.Fatalf("rewinds: %+v", back.Rewinds.Rewinds)
	}
	if string(back.Memory["k"]) != `"one"` || back.Memory["other"] != nil {
		t.Fatalf("memory after the rewind: %s", mustJSON(back.Memory))
	}
	if at3.Plan == nil || at3.Plan.Steps[0].Status != loop.StepPending {
		t.Fatalf("plan at step 3: %s", mustJSON(at3.Plan))
	}
	if back.CurrentIteration != 6 || back.ToolCallCount != at3.ToolCallCount+2 {
		t.Fatalf("after the rewind: step %d, %d tool calls; want step 6 and step 3's %d calls and two more", back.CurrentIteration, back.ToolCallCount, at3.ToolCallCount)
	}
	if back.InteractionCount != at3.InteractionCount+3 {
		t.Fatalf("model calls counted: %d, want step 3's %d and three more", back.InteractionCount, at3.InteractionCount)
	}
	types := e.log.types(st.ID)
	n := len(before)
	if types[n] != "session.rewound" || types[n+1] != "message.added" || types[n+2] != "session.resumed" {
		t.Fatalf("recorded after the rewind: %v", types[n:])
	}
}

// A paused session rewound without a message resumes; an ended one
// rewound without one waits, paused with reason rewound, and a second
// rewind to an earlier step goes back through the first.
func TestRewindWithoutMessageAndTwice(t *testing.T) {
	e := newEnv()
	ctx := t.Context()
	tools := append(session.Tools(), echoTool("write", nil))
	st := run(t, e.runner(t, eightSteps(), tools, nil), "eight steps")

	r := e.runner(t, scripted.Replies(), tools, nil)
	s, err := r.Rewind(ctx, st.ID, loop.RewindTo{At: 6})
	if err != nil {
		t.Fatal(err)
	}
	mid, err := s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mid.Status != loop.StatusPaused || mid.Reason != loop.ReasonRewound || mid.CurrentIteration != 6 || mid.Answer != "" {
		t.Fatalf("an ended session rewound without a message: %s (%s) at step %d, answer %q", mid.Status, mid.Reason, mid.CurrentIteration, mid.Answer)
	}
	if string(mid.Memory["k"]) != `"five"` {
		t.Fatalf("memory at step 6: %s", mustJSON(mid.Memory))
	}

	// Paused: a second rewind, to step 2, resumes it.
	m := scripted.Replies(finishPlan("from two")...)
	r = e.runner(t, m, tools, nil)
	s, err = r.Rewind(ctx, st.ID, loop.RewindTo{At: 2})
	if err != nil {
		t.Fatal(err)
	}
	end, err := s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != loop.StatusCompleted || end.Answer != "from two" {
		t.Fatalf("rewound from paused: %s, %q", end.Status, end.Answer)
	}
	evs, _ := e.log.Load(ctx, st.ID)
	endOf2, _ := loop.LiveStepEnd(evs, 2)
	at2, _ := loop.Fold(evs[:endOf2])
	if got := m.Requests()[0].Messages; !reflect.DeepEqual(got, at2.Conversation) {
		t.Fatalf("after the second rewind the model read %d messages, want step 2's %d", len(got), len(at2.Conversation))
	}
	back := refold(t, e, end)
	if len(back.Rewinds.Rewinds) != 2 || !reflect.DeepEqual(back.Rewinds.Rewinds[1].Steps, []int{3, 4, 5, 6}) {
		t.Fatalf("the second rewind set aside %+v, want 3-6", back.Rewinds.Rewinds)
	}
	// Step 3 now is the one redone: its end in the log is the new one.
	if endOf3, ok := loop.LiveStepEnd(evs, 3); !ok || endOf3 < endOf2 || evs[endOf3-1].Seq < back.Rewinds.Rewinds[1].Seq {
		t.Fatalf("live end of step 3 at %d (ok %v), want the redone step after seq %d", endOf3, ok, back.Rewinds.Rewinds[1].Seq)
	}
}

func TestRewindRefusals(t *testing.T) {
	e := newEnv()
	ctx := t.Context()
	tools := append(session.Tools(), echoTool("write", nil))
	st := run(t, e.runner(t, eightSteps(), tools, nil), "eight steps")
	r := e.runner(t, scripted.Replies(), tools, nil)
	for _, at := range []int{0, 9, -1} {
		if _, err := r.Rewind(ctx, st.ID, loop.RewindTo{At: at}); !errors.Is(err, loop.ErrNoSuchStep) {
			t.Errorf("rewind to step %d: %v, want ErrNoSuchStep", at, err)
		}
	}
	if n := len(e.log.types(st.ID)); n != int(st.Seq) {
		t.Fatalf("refused rewinds recorded events: %d, want %d", n, st.Seq)
	}
	// A running session is refused.
	started := make(chan struct{}, 1)
	m := scripted.Replies(scripted.Call("write", `{"path":"x"}`), scripted.Call("block", `{"path":"x"}`))
	busy := e.runner(t, m, []tool.Tool{echoTool("write", nil), blockingTool("block", started)}, nil)
	s, err := busy.Start(ctx, loop.Task{Prompt: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := busy.Rewind(ctx, s.ID(), loop.RewindTo{At: 1}); !errors.Is(err, loop.ErrNotStopped) {
		t.Errorf("rewinding a running session: %v, want ErrNotStopped", err)
	}
	if _, err := busy.Terminate(ctx, s.ID(), "done"); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A rewind to a step before the conversation was condensed gives the
// model that step's whole conversation again, not the condensed one.
func TestRewindBeforeACondensation(t *testing.T) {
	e := newEnv()
	ctx := t.Context()
	var steps []scripted.Step
	for i := range 6 {
		steps = append(steps, scripted.Call("dump", `{"path":"`+strings.Repeat("x", i+1)+`"}`))
	}
	steps = append(steps, scripted.Text("done"))
	limit := func(c *loop.Config) { c.Limits.ContextTokens = 3000 }
	st := run(t, e.runner(t, scripted.Replies(steps...), []tool.Tool{bigTool(4000)}, limit), "collect the logs")
	evs, _ := e.log.Load(ctx, st.ID)
	first := -1
	for i, ev := range evs {
		if _, ok := ev.Data.(*loop.ConversationCondensed); ok && first < 0 {
			first = i
		}
	}
	if first < 0 {
		t.Fatal("never condensed")
	}
	end2, _ := loop.LiveStepEnd(evs, 2)
	if end2 > first {
		t.Fatalf("step 2 ends at event %d, after the first condensation at %d", end2, first)
	}
	at2, _ := loop.Fold(evs[:end2])

	// Step 2's conversation fits the window: the next request is it.
	m := scripted.Replies(scripted.Text("again"))
	s, err := e.runner(t, m, []tool.Tool{bigTool(4000)}, nil).Rewind(ctx, st.ID, loop.RewindTo{At: 2, Message: "once more"})
	if err != nil {
		t.Fatal(err)
	}
	end, err := s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]model.Message(nil), at2.Conversation...), model.Message{Role: model.RoleUser, Content: "once more"})
	if got := m.Requests()[0].Messages; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the rewind the model read %d messages, want step 2's %d and the message", len(got), len(at2.Conversation))
	}
	back := refold(t, e, end)
	if len(back.Condensations) != len(at2.Condensations) {
		t.Fatalf("condensations after the rewind: %d, at step 2: %d", len(back.Condensations), len(at2.Condensations))
	}
}
