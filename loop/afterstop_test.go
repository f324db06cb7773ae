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
	release := make(chan struct{})
	hold := tool.Func(model.ToolSpec{Name: "hold", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		<-release
		return tool.Result{Output: "ok"}, nil
	})
	r := e.runner(t, scripted.Replies(scripted.Call("hold", `{}`), scripted.Text("done")), []tool.Tool{hold}, nil)
	s, err := r.Start(context.Background(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
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
