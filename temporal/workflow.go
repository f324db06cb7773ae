// Package temporal runs sessions on Temporal: a session is a workflow
// whose code is the loop's decide part — which step comes next, when a
// person's controls apply — and each step (a model call, the tool calls,
// the bookkeeping between) is an activity with its own timeout and retry
// policy. Pause, resume, reply, approve and terminate are signals; the
// session's state is a query.
//
// Steps run as local activities, in the worker that runs the workflow
// task: steps in a row cost no round trip through the server. A signal
// reaches workflow code only between workflow tasks, so once a task's
// steps have run for Input.ControlDelay the next step is a regular
// activity, which ends the task; a control waits at most that long plus
// the step under way.
//
// The workflow history stays small: events, model replies and tool output
// live in the agentloop store, and the history carries only the session ID
// and a short summary of each step. A long session continues as new every
// StepsPerRun steps, carrying the controls not yet applied.
//
// Exactly once: every step is rebuilt from the store's log and durable
// before it completes, so a step taken again after a worker died (an
// activity retried, or local activities the server had not recorded
// before the crash, run again from its last workflow task) continues from
// what the log holds: a recorded model reply is not asked for again, and
// a tool call that may have half-run is re-run only if its tool is
// idempotent (otherwise the model is told its outcome is unknown), as
// after a crash of a local runner. A worker that died in a local step is
// noticed when its workflow task times out (10 s by default).
package temporal

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/loop"
)

// Names Temporal knows agentloop's workflow, activities, signal and query by.
const (
	WorkflowName     = "agentloop.session"
	StepActivity     = "agentloop.step"
	ControlActivity  = "agentloop.control"
	ControlSignal    = "control"
	StateQuery       = "state"
	DefaultTaskQueue = "agentloop"
)

// WorkflowID is the workflow that runs a session.
func WorkflowID(sessionID string) string { return "agentloop-session-" + sessionID }

// Input starts (or continues) a session's workflow.
type Input struct {
	SessionID string
	// StepsPerRun is how many steps one run takes before it continues as
	// new (default 200): the history stays bounded however long the
	// session.
	StepsPerRun int
	// Timeouts of one step's activity, by kind (defaults: model 10 min,
	// tools 30 min, bookkeeping 15 min), and how often a step run as a
	// regular activity must heartbeat (default 30 s): a worker that died
	// is noticed then (in a local step, when its workflow task times out).
	ModelTimeout, ToolsTimeout, BookkeepingTimeout, Heartbeat time.Duration
	// ControlDelay bounds how long a person's control waits while steps
	// run (default 250 ms, plus the step under way): steps run as local
	// activities in one workflow task, and a signal reaches the workflow
	// only between tasks, so once the steps of a task have run this long
	// the next step is a regular activity, which ends the task.
	ControlDelay time.Duration
	// Carried across continue-as-new: where the session was and the
	// controls not applied yet.
	Last    *Summary
	Pending loop.StepControls
	Queue   []Control
}

// Summary is what the history keeps of a step: the session's position,
// never its content.
type Summary struct {
	Status    loop.Status
	Reason    loop.StopReason
	Next      loop.StepKind
	Seq       int64
	Iteration int
}

func summarize(st *loop.State) Summary {
	return Summary{Status: st.Status, Reason: st.Reason, Next: loop.NextStep(st), Seq: st.Seq, Iteration: st.CurrentIteration}
}

// ControlKind is a person's control, sent as the control signal.
type ControlKind string

const (
	ControlPause     ControlKind = "pause"
	ControlResume    ControlKind = "resume"
	ControlReply     ControlKind = "reply"
	ControlGuide     ControlKind = "guide"
	ControlDecide    ControlKind = "decide"
	ControlTerminate ControlKind = "terminate"
)

// Control is the control signal's payload.
type Control struct {
	Kind     ControlKind
	Text     string
	Decision *loop.ApprovalDecision `json:",omitempty"`
}

// SessionWorkflow runs a session step by step until it ends. Workflow
// code: deterministic — no clock, randomness or goroutines of its own.
func SessionWorkflow(ctx workflow.Context, in Input) (Summary, error) {
	if in.StepsPerRun <= 0 {
		in.StepsPerRun = 200
	}
	var cur Summary // the zero Summary: not stepped yet
	if in.Last != nil {
		cur = *in.Last
	}
	pending, queue := in.Pending, in.Queue
	if err := workflow.SetQueryHandler(ctx, StateQuery, func() (Summary, error) { return cur, nil }); err != nil {
		return cur, err
	}
	// Histories recorded before bookkeeping ran as a local activity
	// replay as they ran (see testdata/history-v0.json), and so do those
	// recorded before every step did (testdata/history.json).
	localBookkeeping := workflow.GetVersion(ctx, "local-bookkeeping", workflow.DefaultVersion, 1) == 1
	localSteps := workflow.GetVersion(ctx, "local-steps", workflow.DefaultVersion, 1) == 1
	signals := workflow.GetSignalChannel(ctx, ControlSignal)
	// When the workflow task under way began, in workflow time (which
	// local activities' results move on, as recorded in their markers).
	taskStart := workflow.Now(ctx)
	take := func(c Control) {
		switch c.Kind {
		case ControlPause:
			pending.Pause = firstNonEmpty(c.Text, "paused")
		case ControlGuide:
			pending.Guidance = append(pending.Guidance, c.Text)
		case ControlTerminate:
			pending.Terminate = firstNonEmpty(c.Text, "terminated by user")
		default:
			queue = append(queue, c)
		}
	}
	drain := func() {
		for {
			var c Control
			if !signals.ReceiveAsync(&c) {
				return
			}
			take(c)
		}
	}
	for steps := 0; ; {
		drain()
		if cur.Status.Finished() {
			return cur, nil
		}
		stopped := cur.Status == loop.StatusPaused || cur.Status == loop.StatusWaiting
		if stopped && pending.Terminate == "" {
			if len(queue) == 0 {
				// Nothing to do until a person acts.
				var c Control
				signals.Receive(ctx, &c)
				taskStart = workflow.Now(ctx)
				take(c)
				continue
			}
			c := queue[0]
			queue = queue[1:]
			actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
				StartToCloseTimeout: orDefault(in.BookkeepingTimeout, 15*time.Minute),
				RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5, NonRetryableErrorTypes: []string{refusedType}},
			})
			var next Summary
			err := workflow.ExecuteActivity(actx, ControlActivity, in.SessionID, c).Get(ctx, &next)
			if localSteps {
				taskStart = workflow.Now(ctx)
			}
			if err != nil {
				workflow.GetLogger(ctx).Warn("control refused", "session", in.SessionID, "control", string(c.Kind), "error", err)
				continue // refused (e.g. a reply to a session waiting for approval): the session stays as it is
			}
			cur = next
			continue
		}
		if !stopped && len(queue) > 0 {
			// A reply to a running session is the model's next message;
			// a resume or decision for it has nothing to apply.
			for _, c := range queue {
				if c.Kind == ControlReply {
					pending.Guidance = append(pending.Guidance, c.Text)
				}
			}
			queue = nil
		}
		kind := cur.Next
		if kind == loop.StepNone {
			kind = loop.StepBookkeeping // not stepped yet: the step says where it is
		}
		controls := loop.StepControls{Terminate: pending.Terminate}
		if kind == loop.StepBookkeeping {
			// Pauses and guidance apply at an iteration boundary.
			controls.Pause, controls.Guidance = pending.Pause, pending.Guidance
		}
		var next Summary
		var step workflow.Future
		local := kind == loop.StepBookkeeping && localBookkeeping
		if localSteps {
			local = workflow.Now(ctx).Sub(taskStart) < orDefault(in.ControlDelay, 250*time.Millisecond)
		}
		if local {
			// The step runs beside the workflow code (a local activity):
			// no round trip through the server for it, and steps in a row
			// are one workflow task. Safe to take again after a crash for
			// the reason any step is (see the package doc): the log, not
			// the workflow history, says what has been done.
			opts := stepOptions(in, kind)
			lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
				StartToCloseTimeout: opts.StartToCloseTimeout,
				RetryPolicy:         opts.RetryPolicy,
			})
			step = workflow.ExecuteLocalActivity(lctx, StepActivity, in.SessionID, controls)
		} else {
			step = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, stepOptions(in, kind)), StepActivity, in.SessionID, controls)
		}
		if err := step.Get(ctx, &next); err != nil {
			return cur, err
		}
		if !local && localSteps {
			// A regular activity's result comes in a new workflow task,
			// with the signals sent meanwhile.
			taskStart = workflow.Now(ctx)
		}
		cur = next
		if kind == loop.StepBookkeeping {
			pending.Guidance = nil
			if cur.Status != loop.StatusRunning {
				pending.Pause = ""
			}
		}
		steps++
		if steps >= in.StepsPerRun && cur.Status == loop.StatusRunning {
			drain()
			next := in
			next.Last, next.Pending, next.Queue = &cur, pending, queue
			return cur, workflow.NewContinueAsNewError(ctx, SessionWorkflow, next)
		}
	}
}

// stepOptions are the timeout and retry policy of one kind of step.
func stepOptions(in Input, kind loop.StepKind) workflow.ActivityOptions {
	timeout := orDefault(in.BookkeepingTimeout, 15*time.Minute)
	switch kind {
	case loop.StepModel:
		timeout = orDefault(in.ModelTimeout, 10*time.Minute)
	case loop.StepTools:
		timeout = orDefault(in.ToolsTimeout, 30*time.Minute)
	}
	return workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    orDefault(in.Heartbeat, 30*time.Second),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			// A step is safe to retry (it continues from the log); a
			// session that cannot be stepped at all is not.
			NonRetryableErrorTypes: []string{refusedType},
		},
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
