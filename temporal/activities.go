package temporal

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agentloop/agentloop/loop"
)

// refusedType marks errors retrying cannot fix (no such session, a
// control the session refuses).
const refusedType = "agentloop.refused"

// Activities are the steps a worker performs, on its runner (which reads
// and writes the agentloop store).
type Activities struct {
	Runner *loop.Runner
	// HeartbeatEvery is how often a running step heartbeats (default 5 s).
	HeartbeatEvery time.Duration
}

// Step takes one step of a session (see loop.Runner.Step).
func (a *Activities) Step(ctx context.Context, id string, c loop.StepControls) (Summary, error) {
	stop := a.heartbeat(ctx)
	defer stop()
	st, err := a.Runner.Step(ctx, id, c)
	if err != nil {
		if errors.Is(err, loop.ErrNotFound) {
			return Summary{}, temporal.NewNonRetryableApplicationError(err.Error(), refusedType, err)
		}
		return Summary{}, err
	}
	return summarize(st), nil
}

// Control records a person's resume, reply or decision on a stopped
// session.
func (a *Activities) Control(ctx context.Context, id string, c Control) (Summary, error) {
	var st *loop.State
	var err error
	switch c.Kind {
	case ControlResume:
		st, err = a.Runner.RecordResume(ctx, id, c.Text)
	case ControlReply:
		st, err = a.Runner.RecordReply(ctx, id, c.Text)
	case ControlDecide:
		if c.Decision == nil {
			return Summary{}, temporal.NewNonRetryableApplicationError("a decide control without a decision", refusedType, nil)
		}
		st, err = a.Runner.RecordDecision(ctx, id, *c.Decision)
	default:
		return Summary{}, temporal.NewNonRetryableApplicationError("unknown control "+string(c.Kind), refusedType, nil)
	}
	if err != nil {
		if errors.Is(err, loop.ErrRunning) || ctx.Err() != nil {
			return Summary{}, err
		}
		// The session refuses it (finished, waiting for something else):
		// retrying would not change that.
		return Summary{}, temporal.NewNonRetryableApplicationError(err.Error(), refusedType, err)
	}
	return summarize(st), nil
}

// heartbeat reports the step alive until stop is called, so a worker that
// died is noticed within the heartbeat timeout, not the step's. A local
// activity has no heartbeat: its workflow task's timeout does that.
func (a *Activities) heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return func() {}
	}
	every := a.HeartbeatEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
