package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// NewWorker makes a worker of taskQueue that runs session workflows and
// their steps on a's runner. Start it with Run or Start.
//
// Unless opts sets how the worker polls, its pollers scale with the work,
// as the server advises. The SDK's default, two workflow task pollers
// taking turns with the worker's own sticky queue, keeps one poll open
// on a task queue the server splits in four: a burst of new sessions
// then waits in the other parts until that poll times out, a minute
// later.
func NewWorker(c client.Client, taskQueue string, a *Activities, opts worker.Options) worker.Worker {
	w := worker.New(c, taskQueue, scalingPollers(opts))
	Register(w, a)
	return w
}

// scalingPollers is opts with pollers that scale with the work for the
// kinds of task opts says nothing about.
func scalingPollers(opts worker.Options) worker.Options {
	if opts.MaxConcurrentWorkflowTaskPollers == 0 && opts.WorkflowTaskPollerBehavior == nil {
		opts.WorkflowTaskPollerBehavior = worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})
	}
	if opts.MaxConcurrentActivityTaskPollers == 0 && opts.ActivityTaskPollerBehavior == nil {
		opts.ActivityTaskPollerBehavior = worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})
	}
	return opts
}

// Register adds the workflow and activities to a worker (or a test
// environment).
func Register(w interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}, a *Activities) {
	w.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: StepActivity})
	w.RegisterActivityWithOptions(a.Control, activity.RegisterOptions{Name: ControlActivity})
}

// Engine starts sessions on Temporal and controls them. Runner records a
// new session in the store (its session.started) before its workflow
// starts; it runs nothing.
type Engine struct {
	Client    client.Client
	Runner    *loop.Runner
	TaskQueue string
	// Input is the template of each workflow's input (timeouts, steps per
	// run); SessionID is filled in.
	Input Input
}

// Start records a session and starts its workflow.
func (e *Engine) Start(ctx context.Context, task loop.Task) (string, error) {
	st, err := e.Runner.Create(ctx, task)
	if err != nil {
		return "", err
	}
	if err := e.Run(ctx, st.ID); err != nil {
		return st.ID, err
	}
	return st.ID, nil
}

// Run starts the workflow of a session already in the store (a session
// moved to Temporal, or one whose workflow failed); a workflow already
// running for it is left alone.
func (e *Engine) Run(ctx context.Context, sessionID string) error {
	in := e.Input
	in.SessionID = sessionID
	_, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        WorkflowID(sessionID),
		TaskQueue: e.queue(),
	}, WorkflowName, in)
	if err != nil {
		return fmt.Errorf("start the workflow of session %s: %w", sessionID, err)
	}
	return nil
}

func (e *Engine) queue() string {
	if e.TaskQueue != "" {
		return e.TaskQueue
	}
	return DefaultTaskQueue
}

// Send delivers a person's control to a session's workflow; a running
// session takes it within Input.ControlDelay plus the step under way.
func (e *Engine) Send(ctx context.Context, sessionID string, c Control) error {
	return e.Client.SignalWorkflow(ctx, WorkflowID(sessionID), "", ControlSignal, c)
}

// State asks a session's workflow where the session is. Like a signal, a
// query is answered between workflow tasks: while local steps run, within
// Input.ControlDelay plus the step under way (the store's log is always
// current; the service reads that).
func (e *Engine) State(ctx context.Context, sessionID string) (Summary, error) {
	v, err := e.Client.QueryWorkflow(ctx, WorkflowID(sessionID), "", StateQuery)
	if err != nil {
		return Summary{}, err
	}
	var s Summary
	err = v.Get(&s)
	return s, err
}

// Open reports whether a session's workflow is open: running steps, or
// waiting, paused, for a control. A workflow that ended (its session
// ended, or it failed) or never started is not (service.WorkflowEngine).
func (e *Engine) Open(ctx context.Context, sessionID string) (bool, error) {
	d, err := e.Client.DescribeWorkflowExecution(ctx, WorkflowID(sessionID), "")
	var none *serviceerror.NotFound
	if errors.As(err, &none) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The latest run is described: one continued as new is still open.
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// Wait waits for a session's workflow to end (across continue-as-new).
func (e *Engine) Wait(ctx context.Context, sessionID string) (Summary, error) {
	var s Summary
	err := e.Client.GetWorkflow(ctx, WorkflowID(sessionID), "").Get(ctx, &s)
	return s, err
}

// Control delivers a control stored by the service (service.Engine).
func (e *Engine) Control(ctx context.Context, sessionID string, ctl store.Control) error {
	c := Control{Text: ctl.Text}
	switch ctl.Kind {
	case store.ControlPause:
		c.Kind = ControlPause
	case store.ControlResume:
		c.Kind = ControlResume
	case store.ControlReply:
		c.Kind = ControlReply
	case store.ControlTerminate:
		c.Kind = ControlTerminate
	case store.ControlDecide:
		var d loop.ApprovalDecision
		if err := json.Unmarshal(ctl.Decision, &d); err != nil {
			return fmt.Errorf("the decision is not readable: %w", err)
		}
		c.Kind, c.Decision = ControlDecide, &d
	default:
		return fmt.Errorf("unknown control %q", ctl.Kind)
	}
	return e.Send(ctx, sessionID, c)
}
