package loop_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

func TestStateErr(t *testing.T) {
	e := newEnv()
	r := e.runner(t, scripted.Replies(scripted.Text("The answer is 42.")), []tool.Tool{echoTool("read_file", nil)}, nil)
	if st := run(t, r, "x"); st.Status != loop.StatusCompleted || st.Err() != nil {
		t.Fatalf("completed session: %s, Err %v", st.Status, st.Err())
	}

	// A limit ends the session: Run says nothing, Err does.
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("partial"))
	r = e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) { c.Limits.MaxIterations = 1 })
	st, err := r.Run(t.Context(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var end *loop.EndError
	if !errors.As(st.Err(), &end) || end.Status != loop.StatusFailed || end.Reason != loop.ReasonMaxIterations || end.ID != st.ID {
		t.Fatalf("%s %s: Err %#v", st.Status, st.Reason, st.Err())
	}
	if !strings.Contains(st.Err().Error(), "failed: max_iterations") {
		t.Fatalf("message %q", st.Err())
	}
	if (&loop.State{Header: loop.Header{Status: loop.StatusRunning}}).Err() != nil {
		t.Fatal("a running session has an error")
	}
}
