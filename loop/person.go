package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// Why a person ended a session, as the terminate dialog offers it. Each
// maps to the session's final status.
const (
	// ReasonCompletedByUser: "the task is done" — status completed.
	ReasonCompletedByUser StopReason = "completed_by_user"
	// ReasonFailedByUser: "the task failed, I'll fix it myself" — failed.
	ReasonFailedByUser StopReason = "failed_by_user"
	// ReasonDifferentApproach: "I want to try a different approach" —
	// terminated.
	ReasonDifferentApproach StopReason = "different_approach"
	// ReasonStuckByUser: "the agent is stuck or hanging" — error.
	ReasonStuckByUser StopReason = "stuck_by_user"
)

// ReasonPermissionDenied: a tool was refused access by the operating
// system or the workspace; the session waits for a person.
const ReasonPermissionDenied StopReason = "permission_denied"

// ReasonModelTimeout: a model call timed out twice in a row; the session
// is paused until a person resumes it.
const ReasonModelTimeout StopReason = "model_timeout"

// TerminationOutcome maps what a person gave as the reason to terminate a
// session — one of completed_by_user, failed, different_approach, stuck,
// or any other text — to the final status and machine-readable reason.
// Free text ends the session terminated, reason terminated.
func TerminationOutcome(given string) (Status, StopReason) {
	switch strings.TrimSpace(strings.ToLower(given)) {
	case "completed_by_user", "completed", "task_completed":
		return StatusCompleted, ReasonCompletedByUser
	case "failed", "failed_by_user", "task_failed":
		return StatusFailed, ReasonFailedByUser
	case "different_approach":
		return StatusTerminated, ReasonDifferentApproach
	case "stuck", "stuck_by_user":
		return StatusError, ReasonStuckByUser
	}
	return StatusTerminated, ReasonTerminated
}

// permissionDenied stops the session for a person after a tool was
// refused access: the rest of the reply does not run, and the question
// names the tool and the error. Resuming lets the model go on with the
// refusal in its conversation.
func (s *Session) permissionDenied(ctx context.Context, call model.ToolCall, output string) error {
	st := s.state
	for _, rest := range st.PendingCalls {
		s.emit(&ToolFinished{Iteration: st.CurrentIteration, CallID: rest.ID, Name: rest.Name, Output: "not run: an earlier call was refused access and the session waits for a person", IsError: true, Refused: true})
	}
	s.closeIteration(IterationFailed, "permission denied: "+call.Name, "")
	s.emit(&SessionWaiting{Reason: ReasonPermissionDenied, Question: fmt.Sprintf(
		"The tool %s was refused access:\n%s\n\nFix the permissions (or the path) and resume the session, reply with guidance, or terminate it.",
		call.Name, strings.TrimPrefix(output, "error: "))})
	return nil
}
