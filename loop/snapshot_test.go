package loop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/session"
)

type verifierFunc func(ctx context.Context, st *loop.State) []loop.VerifyCheck

func (f verifierFunc) Verify(ctx context.Context, st *loop.State) []loop.VerifyCheck {
	return f(ctx, st)
}

// Every log a varied set of sessions writes — plans, memory, approvals,
// stuck detection and a person's reply, verification that fails then
// passes, cut-off and empty replies, a failed model call, pause and resume
// — keeps the snapshot property at every event.
func TestSnapshotsOfEveryScenario(t *testing.T) {
	e := newEnv()
	ctx := t.Context()
	tools := append(session.Tools(), echoTool("read_file", nil), echoTool("write", nil))

	// Plan and memory, a cut-off reply, an empty one, then the answer.
	m := scripted.Replies(
		scripted.Call("update_plan", `{"action":"create","goal":"g","steps":["a","b"]}`),
		scripted.Call("remember", `{"key":"k","value":"v"}`),
		scripted.Text("half").WithFinishReason(model.FinishLength),
		scripted.Text(""),
		scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"completed"}`),
		scripted.Call("update_plan", `{"action":"update_step","step":2,"status":"completed"}`),
		scripted.Call("update_plan", `{"action":"complete"}`),
		scripted.Text("all done"),
	)
	run(t, e.runner(t, m, tools, nil), "plan it")

	// Approvals: one asked and approved with edited arguments.
	m = scripted.Replies(scripted.Call("write", `{"path":"a"}`), scripted.Text("wrote"))
	r := e.runner(t, m, tools, func(c *loop.Config) {
		c.Approval = func(t tool.Tool) loop.Policy {
			if t.Spec().Name == "write" {
				return loop.PolicyAsk
			}
			return loop.PolicyAuto
		}
	})
	st := run(t, r, "write")
	p := st.PendingApprovals[0]
	s, err := r.Decide(ctx, st.ID, loop.ApprovalDecision{CallID: p.CallID, ArgsHash: p.ArgsHash, Approved: true, EditedInput: []byte(`{"path":"b"}`)})
	if err != nil {
		t.Fatal(err)
	}
	s.Wait(ctx)

	// Stuck: the same call and result until it waits, then a reply.
	same := scripted.Call("read_file", `{"path":"x"}`)
	m = scripted.Replies(same, same, same, same, same, same, same, same, same, scripted.Text("trying y"))
	r = e.runner(t, m, tools, nil)
	st = run(t, r, "loop")
	if st.Status == loop.StatusWaiting {
		s, err := r.Reply(ctx, st.ID, "try y")
		if err != nil {
			t.Fatal(err)
		}
		s.Wait(ctx)
	}

	// Verification fails once, then passes; a model call fails once first.
	calls := 0
	m = scripted.Replies(scripted.Fail(model.ErrMalformed), scripted.Text("done"), scripted.Text("fixed, done"))
	r = e.runner(t, m, tools, func(c *loop.Config) {
		c.Verifier = verifierFunc(func(context.Context, *loop.State) []loop.VerifyCheck {
			calls++
			return []loop.VerifyCheck{{Name: "test", Passed: calls > 1, Output: "FAIL"}}
		})
	})
	run(t, r, "fix")

	// A fatal model error; a pause and a resume.
	run(t, e.runner(t, scripted.Replies(scripted.Fail(errors.New("401 unauthorized"))), tools, nil), "fail")
	m = scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"))
	r = e.runner(t, m, tools, nil)
	s, err = r.Start(ctx, loop.Task{Prompt: "pause me"})
	if err != nil {
		t.Fatal(err)
	}
	s.Pause("break")
	if st, _ := s.Wait(ctx); st.Status == loop.StatusPaused {
		s, _ = r.Resume(ctx, st.ID, "back")
		s.Wait(ctx)
	}

	if len(e.log.events) < 6 {
		t.Fatalf("only %d sessions were logged", len(e.log.events))
	}
	for id, evs := range e.log.events {
		t.Run(id, func(t *testing.T) { checkSnapshots(t, evs) })
	}
}
