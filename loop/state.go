package loop

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// Status is where a session is in its life.
type Status string

const (
	StatusIdle       Status = "idle"
	StatusRunning    Status = "running"
	StatusPaused     Status = "paused"
	StatusWaiting    Status = "waiting" // for a person
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed"
	StatusTerminated Status = "terminated"
	StatusError      Status = "error"
)

// ParseStatus checks a status a person typed.
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case StatusRunning, StatusPaused, StatusWaiting, StatusCompleted, StatusFailed, StatusTerminated, StatusError:
		return st, nil
	}
	return "", fmt.Errorf("status %q: use running, paused, waiting, completed, failed, terminated or error", s)
}

// Finished reports whether the status is final.
func (s Status) Finished() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusTerminated, StatusError:
		return true
	}
	return false
}

// StopReason is the machine-readable reason a session stopped or paused.
type StopReason string

const (
	ReasonCompleted       StopReason = "completed"
	ReasonMaxIterations   StopReason = "max_iterations"
	ReasonTimeout         StopReason = "timeout"
	ReasonBudgetTokens    StopReason = "budget_tokens"
	ReasonBudgetCost      StopReason = "budget_cost"
	ReasonBudgetToolCalls StopReason = "budget_tool_calls"
	ReasonStuck           StopReason = "stuck"
	ReasonRepetition      StopReason = "repetition"
	ReasonNoProgress      StopReason = "no_progress"
	ReasonTerminated      StopReason = "terminated"
	ReasonError           StopReason = "error"
	// Pause-only reasons.
	ReasonUser        StopReason = "user"        // a person paused it
	ReasonModelError  StopReason = "model_error" // provider retries ran out
	ReasonApproval    StopReason = "approval"    // a tool call needs approval
	ReasonQuestion    StopReason = "question"    // the model asked a person
	ReasonInterrupted StopReason = "interrupted" // the process stopped (Ctrl-C)
	ReasonShutdown    StopReason = "shutdown"    // the server shut down; it resumes it on start
)

// IterationStatus is the state of one iteration.
type IterationStatus string

const (
	IterationInProgress IterationStatus = "in_progress"
	IterationCompleted  IterationStatus = "completed"
	IterationFailed     IterationStatus = "failed"
)

// ToolStatus is the state of one tool call.
type ToolStatus string

const (
	ToolPending ToolStatus = "pending"
	ToolSuccess ToolStatus = "success"
	ToolError   ToolStatus = "error"
)

// Mode selects how the runner treats replies.
type Mode string

const (
	// ModeTools is the ReAct loop: a reply without tool calls is the answer.
	ModeTools Mode = "tools"
	// ModeSelfReasoning continues the model's own reasoning until it writes
	// the completion marker.
	ModeSelfReasoning Mode = "self_reasoning"
)

// MessageRecord is a message as shown in session history.
type MessageRecord struct {
	ID         string      `json:"id"`
	Role       model.Role  `json:"role"`
	Content    string      `json:"content"`
	Time       time.Time   `json:"timestamp"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
	Kind       MessageKind `json:"kind,omitempty"`
}

// ToolCallRecord is one tool call as shown in session history.
type ToolCallRecord struct {
	ID       string              `json:"id"`
	Name     string              `json:"tool_name"`
	Input    json.RawMessage     `json:"input"`
	Output   string              `json:"output,omitempty"`
	Time     time.Time           `json:"timestamp"`
	Duration Duration            `json:"duration"`
	Status   ToolStatus          `json:"status"`
	Error    string              `json:"error,omitempty"`
	Modified []tool.Modification `json:"modified,omitempty"`
	// Failed: the call could not run or finish (refused, invalid, timed
	// out, crashed), as opposed to running and reporting an error.
	Failed bool `json:"failed,omitempty"`
}

// Iteration is one model call and the tool calls it asked for.
type Iteration struct {
	N         int              `json:"number"`
	StartedAt time.Time        `json:"started_at"`
	EndedAt   time.Time        `json:"ended_at,omitzero"`
	Duration  Duration         `json:"duration"`
	Status    IterationStatus  `json:"status"`
	Messages  []MessageRecord  `json:"messages"`
	ToolCalls []ToolCallRecord `json:"tool_calls"`
	Error     string           `json:"error,omitempty"`
	Usage     model.Usage      `json:"usage"`
	CostUSD   float64          `json:"cost_usd,omitempty"`
	// Model is the model that made this iteration's calls (the last one,
	// when the session switched models during it).
	Model string `json:"model,omitempty"`
	// Responded is true once the model answered in this iteration.
	Responded bool `json:"-"`
	// Correction is true when this iteration ended with a correction request.
	Correction bool `json:"-"`
	// Faults counts the model calls of this iteration that timed out or
	// got an unreadable reply, since it started or a person resumed.
	Faults int `json:"-"`
	// Rewound: a rewind set this step aside; it is kept for audit and is
	// no longer part of the session (rewind.go).
	Rewound bool `json:"rewound,omitempty"`
}

// PendingApproval is a tool call waiting for a person's decision.
type PendingApproval struct {
	CallID   string          `json:"call_id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	ArgsHash string          `json:"args_hash"`
}

// Plan is the model's plan, when it made one.
type Plan struct {
	Goal   string     `json:"goal"`
	Status PlanStatus `json:"status"`
	Steps  []PlanStep `json:"steps"`
	// Reason is why the plan failed or was completed, when the model said.
	Reason string `json:"reason,omitempty"`
	// Current is the 1-based number of the step being worked on; 0 when
	// none is.
	Current int `json:"current_step"`
}

// CurrentStep is the 1-based number of the step being worked on: the
// first in progress, else the first not done; 0 when every step is done.
func CurrentStep(steps []PlanStep) int {
	for i, s := range steps {
		if s.Status == StepInProgress {
			return i + 1
		}
	}
	for i, s := range steps {
		if !s.Status.Done() {
			return i + 1
		}
	}
	return 0
}

// State is a session as the fold of its events. Nothing else holds session
// state: the runner, the store, the CLI and watchers all derive it from the
// log. It is made of concerns, each in its own file and the only code that
// writes its fields: what the session is and how it stands (Header), its
// counters (Totals), what the model sees (Dialogue), the turn in progress
// (Turn), the history shown to people (History), the plan (PlanState), the
// memory (MemoryState), a protocol's finished steps (ProtocolState), the
// last verification (VerificationState), progress and repetition
// (Progress) and the final answer still owed (Settlement). Their fields are
// promoted: st.Plan, st.Usage, st.Conversation.
type State struct {
	Header
	Totals
	Dialogue
	Turn
	Allowances
	History
	PlanState
	MemoryState
	ProtocolState
	VerificationState
	Progress
	Settlement
	AnswerState
	Rewinds
}

// Fold builds a state from a whole log.
func Fold(events []Event) (*State, error) {
	s := &State{Header: Header{Status: StatusIdle}}
	for _, e := range events {
		if err := s.Apply(e); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Apply folds one event into the state. Events must arrive in sequence;
// a gap or a repeat is an error, so a torn or duplicated log is never
// silently accepted; an event type outside the catalogue is refused.
func (s *State) Apply(e Event) error {
	if e.Seq != s.Seq+1 {
		return fmt.Errorf("session %s: event %d (%s) out of order: expected %d", e.SessionID, e.Seq, e.Type, s.Seq+1)
	}
	if s.Seq > 0 && e.SessionID != s.ID {
		return fmt.Errorf("event %d belongs to session %s, not %s", e.Seq, e.SessionID, s.ID)
	}
	if e.Data == nil {
		return fmt.Errorf("session %s: event %d: %w (no payload)", e.SessionID, e.Seq, ErrUnknownEvent)
	}
	if _, known := payloads[e.Data.EventType()]; !known {
		return fmt.Errorf("session %s: event %d: %w %T", e.SessionID, e.Seq, ErrUnknownEvent, e.Data)
	}
	if d, ok := e.Data.(*SessionRewound); ok {
		// A rewind restores the other parts from a restore point.
		if err := s.rewind(e, d); err != nil {
			return err
		}
		s.Seq = e.Seq
		return nil
	}
	s.Seq = e.Seq
	s.Settlement.apply(e)
	s.Header.apply(e)
	s.Totals.apply(e)
	s.Dialogue.apply(e)
	s.Turn.apply(e)
	s.Allowances.apply(e)
	s.History.apply(e)
	switch e.Data.(type) {
	case *IterationStarted, *ModelSwitched:
		if it := s.current(); it != nil && it.Status == IterationInProgress {
			it.Model = s.CurrentModel
		}
	}
	s.Progress.apply(e, s.current(), s.CurrentIteration, s.Limits)
	s.PlanState.apply(e)
	s.MemoryState.apply(e)
	s.ProtocolState.apply(e)
	s.VerificationState.apply(e)
	s.AnswerState.apply(e)
	s.keepForRewind(e)
	return nil
}
