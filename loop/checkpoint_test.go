package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// TestCheckpointsAfterIterationsThatChangeFiles: one checkpoint as the
// workspace was found, then one after each iteration that modified files
// or ran a command, none after one that only read; a failed snapshot is
// a warning and the session carries on.
func TestCheckpointsAfterIterationsThatChangeFiles(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Call("write_file", `{"path":"x"}`), // 1: modifies
		scripted.Call("read_file", `{}`),            // 2: reads
		scripted.Call("execute_command", `{}`),      // 3: a command
		scripted.Call("write_file", `{"path":"y"}`), // 4: snapshot fails
		scripted.Text("done"))
	writer := tool.Func(model.ToolSpec{Name: "write_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		tool.ReportModification(ctx, tool.Modification{Path: "x", Kind: tool.Changed})
		return tool.Result{Output: "ok"}, nil
	})
	var asked []int
	r := e.runner(t, m, []tool.Tool{writer, echoTool("read_file", nil), echoTool("execute_command", nil)}, func(c *loop.Config) {
		c.Checkpoint = func(_ context.Context, st *loop.State, n int) (string, error) {
			asked = append(asked, n)
			if n == 4 {
				return "", errors.New("disk full")
			}
			return fmt.Sprintf("%s-%d", st.ID, n), nil
		}
	})
	st := run(t, r, "x")
	checkScript(t, m)
	if fmt.Sprint(asked) != "[0 1 3 4]" {
		t.Fatalf("checkpoints asked for iterations %v, want [0 1 3 4]", asked)
	}
	var got []string
	warned := false
	for _, ev := range e.log.events[st.ID] {
		switch d := ev.Data.(type) {
		case *loop.WorkspaceCheckpointed:
			got = append(got, fmt.Sprintf("%d=%s", d.Iteration, d.ID))
		case *loop.Warning:
			warned = warned || (d.Code == loop.WarnCheckpointFailed && strings.Contains(d.Message, "disk full"))
		}
	}
	want := fmt.Sprintf("[0=%[1]s-0 1=%[1]s-1 3=%[1]s-3]", st.ID)
	if fmt.Sprint(got) != want {
		t.Errorf("recorded %v, want %s", got, want)
	}
	if !warned || st.Status != loop.StatusCompleted {
		t.Errorf("warned %v, status %s", warned, st.Status)
	}
	refold(t, e, st)
}
