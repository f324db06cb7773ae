package temporal_test

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/temporal"
	"github.com/agentloop/agentloop/temporal/temporaltest"
)

// On a real dev server: steps in a row run as local activities, yet a
// pause sent while they run reaches the session long before it would
// have finished — the workflow ends its task every Input.ControlDelay
// of steps (without that, a signal waits for the SDK's workflow task
// heartbeat, 8 s, and this session is done in about 4 s).
func TestPauseReachesSessionRunningLocalSteps(t *testing.T) {
	addr := temporaltest.Start(t)
	const steps = 40
	s := script(steps)
	for i := range s.Steps {
		s.Steps[i] = s.Steps[i].WithDelay(100 * time.Millisecond)
	}
	f := newScriptFixture(t, s)

	tc, err := client.Dial(client.Options{HostPort: addr, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	w := temporal.NewWorker(tc, "controls", &temporal.Activities{Runner: f.runner}, worker.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	engine := &temporal.Engine{Client: tc, Runner: f.runner, TaskQueue: "controls"}
	if err := engine.Run(t.Context(), f.id); err != nil {
		t.Fatal(err)
	}

	// Pause once the first tool call has run.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if f.ran() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tool call ran; the session is %s", f.final(t).Status)
		}
	}
	if err := engine.Send(t.Context(), f.id, temporal.Control{Kind: temporal.ControlPause, Text: "look"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st := f.final(t)
		if st.Status == loop.StatusPaused {
			break
		}
		if st.Status != loop.StatusRunning || time.Now().After(deadline) {
			t.Fatalf("after the pause the session is %s with %d of %d tool calls run, want paused", st.Status, f.ran(), steps)
		}
	}
	if err := engine.Send(t.Context(), f.id, temporal.Control{Kind: temporal.ControlResume}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if sum, err := engine.Wait(ctx, f.id); err != nil || sum.Status != loop.StatusCompleted {
		t.Fatalf("after resuming: %+v %v", sum, err)
	}
	f.eachToolOnce(t, steps)
	if err := f.model.Err(); err != nil {
		t.Fatalf("script: %v", err)
	}

	// Most steps were local (markers), some regular activities ended a
	// workflow task so the signals came in.
	hist, err := temporal.ReadHistory(tc.GetWorkflowHistory(t.Context(), temporal.WorkflowID(f.id), "", false, 0))
	if err != nil {
		t.Fatal(err)
	}
	local, regular := 0, 0
	for _, e := range hist.Events {
		switch e.EventType {
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if e.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
				local++
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == temporal.StepActivity {
				regular++
			}
		}
	}
	if local == 0 || regular == 0 {
		t.Fatalf("%d local steps and %d regular ones, want both", local, regular)
	}
	t.Logf("%d local steps, %d regular ones", local, regular)
}

// quiet drops the SDK's log lines.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
