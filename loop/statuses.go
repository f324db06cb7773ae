package loop

// PlanStatus is where a plan is.
type PlanStatus string

// A plan is planning (made, no step started), executing, waiting for the
// user (it waits with the session for an answer), completed or failed.
// Logs written before these phases say "active" for the first three.
const (
	PlanPlanning       PlanStatus = "planning"
	PlanExecuting      PlanStatus = "executing"
	PlanWaitingForUser PlanStatus = "waiting_for_user"
	PlanCompleted      PlanStatus = "completed"
	PlanFailed         PlanStatus = "failed"
	PlanActive         PlanStatus = "active" // planning or executing, in older logs
)

// Open reports whether the plan is still being worked through.
func (s PlanStatus) Open() bool {
	return s != PlanCompleted && s != PlanFailed
}

// StepStatus is where a step of a plan is; empty means pending.
type StepStatus string

const (
	StepPending    StepStatus = "pending"
	StepInProgress StepStatus = "in_progress"
	StepCompleted  StepStatus = "completed"
	StepFailed     StepStatus = "failed"
	StepSkipped    StepStatus = "skipped"
)

// Done reports whether a step needs no more work.
func (s StepStatus) Done() bool {
	return s == StepCompleted || s == StepFailed || s == StepSkipped
}

// WarningCode names what a warning is about.
type WarningCode string

const (
	WarnToolRerun           WarningCode = "tool_rerun"              // an idempotent call is run again after a crash
	WarnBadToolEffect       WarningCode = "bad_tool_effect"         // a tool returned an event tools may not record
	WarnEmptyReply          WarningCode = "empty_reply"             // the model's reply was empty
	WarnModelCallRetry      WarningCode = "model_call_retry"        // a timed-out or unreadable call is made again
	WarnProseWithPlan       WarningCode = "prose_with_pending_plan" // an answer while plan steps are pending
	WarnTruncatedToolCalls  WarningCode = "truncated_tool_calls"    // tool calls in a cut-off reply did not run
	WarnUnrecoveredToolCall WarningCode = "unrecovered_tool_call"   // a text tool call stayed unreadable
	WarnWrapUpFailed        WarningCode = "wrap_up_failed"          // the limit's wrap-up call failed
)
