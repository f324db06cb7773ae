package loop_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// What AfterStop is given runs once the session stopped, after Done is
// closed and with its final state, whether it is given before the
// session stops or after.
func TestAfterStopRunsOnceTheSessionStopped(t *testing.T) {
	e := newEnv()
	entered, release := make(chan struct{}), make(chan struct{})
	// Any arguments do: the call must run (and hold the session), not be
	// refused, or the session could end before AfterStop is given.
	hold := tool.Func(model.ToolSpec{Name: "hold", Parameters: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		close(entered)
		<-release
		return tool.Result{Output: "ok"}, nil
	})
	r := e.runner(t, scripted.Replies(scripted.Call("hold", `{}`), scripted.Text("done")), []tool.Tool{hold}, nil)
	s, err := r.Start(context.Background(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	select { // the session is held in the tool until release
	case <-entered:
	case <-s.Done():
		st, err := s.Wait(context.Background())
		t.Fatalf("the session ended (%s %s, %v) without running the tool", st.Status, st.Detail, err)
	}
	ran := make(chan loop.Status, 1)
	s.AfterStop(func() {
		select {
		case <-s.Done():
		default:
			t.Error("AfterStop ran before Done was closed")
		}
		st, _ := s.Wait(context.Background())
		ran <- st.Status
	})
	select {
	case <-ran:
		t.Fatal("AfterStop ran while the session was still running")
	default:
	}
	close(release)
	if st := <-ran; st != loop.StatusCompleted {
		t.Fatalf("AfterStop saw %s", st)
	}
	late := false
	s.AfterStop(func() { late = true })
	if !late {
		t.Fatal("AfterStop given after the stop did not run at once")
	}
}
