package loop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
)

// Recover continues a session left running, and leaves one a person
// paused (or one that ended) as it is: its log gains nothing.
func TestRecoverContinuesOnlyASessionLeftRunning(t *testing.T) {
	e := newEnv()
	paused := run(t, e.runner(t, scripted.Replies(scripted.Fail(&model.RetryableError{Err: context.DeadlineExceeded})), nil, nil), "x")
	if paused.Status != loop.StatusPaused {
		t.Fatalf("the session is %s, want paused", paused.Status)
	}
	m := scripted.Replies(scripted.Text("thinking"), scripted.Text("TASK_COMPLETE: done"))
	r := e.runner(t, m, nil, func(c *loop.Config) { c.Mode = loop.ModeSelfReasoning })
	ended := run(t, r, "think")
	if ended.Status != loop.StatusCompleted {
		t.Fatalf("the session is %s, want completed", ended.Status)
	}
	for _, st := range []*loop.State{paused, ended} {
		before, _ := e.log.Load(t.Context(), st.ID)
		if _, err := r.Recover(t.Context(), st.ID); !errors.Is(err, loop.ErrNotLeftRunning) {
			t.Fatalf("recovering a %s session: %v, want ErrNotLeftRunning", st.Status, err)
		}
		if after, _ := e.log.Load(t.Context(), st.ID); len(after) != len(before) {
			t.Fatalf("recovering a %s session recorded %d events", st.Status, len(after)-len(before))
		}
	}

	// Cut the completed session's log after its first reply, as a crash
	// would: it is left running, and Recover finishes it.
	evs, _ := e.log.Load(t.Context(), ended.ID)
	for i, ev := range evs {
		if ev.Type == loop.TypeModelResponded {
			e.log.truncate(ended.ID, i+1)
			break
		}
	}
	m2 := scripted.Replies(scripted.Text("TASK_COMPLETE: done"))
	r2 := e.runner(t, m2, nil, func(c *loop.Config) { c.Mode = loop.ModeSelfReasoning })
	s, err := r2.Recover(t.Context(), ended.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := s.Wait(t.Context()); err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("the recovered session: %v %v", st.Status, err)
	}
}
