package loop

import (
	"encoding/json"
	"fmt"
	"strconv"
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
	ReasonInterrupted StopReason = "interrupted" // the process stopped (Ctrl-C, shutdown)
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
	Duration time.Duration       `json:"duration"`
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
	Duration  time.Duration    `json:"duration"`
	Status    IterationStatus  `json:"status"`
	Messages  []MessageRecord  `json:"messages"`
	ToolCalls []ToolCallRecord `json:"tool_calls"`
	Error     string           `json:"error,omitempty"`
	Usage     model.Usage      `json:"usage"`
	CostUSD   float64          `json:"cost_usd,omitempty"`
	// Responded is true once the model answered in this iteration.
	Responded bool `json:"-"`
	// Correction is true when this iteration ended with a correction request.
	Correction bool `json:"-"`
	// Faults counts the model calls of this iteration that timed out or
	// got an unreadable reply, since it started or a person resumed.
	Faults int `json:"-"`
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
}

// State is a session as the fold of its events. Nothing else holds session
// state: the runner, the store, the CLI and watchers all derive it from the log.
type State struct {
	ID               string            `json:"id"`
	Task             string            `json:"task"`
	SystemPrompt     string            `json:"system_prompt,omitempty"`
	Model            string            `json:"model,omitempty"`
	Mode             Mode              `json:"mode"`
	Marker           string            `json:"marker,omitempty"`
	Tools            []string          `json:"tools,omitempty"`
	Workspace        string            `json:"workspace,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Verify           []string          `json:"verify,omitempty"`
	Endpoint         string            `json:"endpoint,omitempty"`
	Approval         string            `json:"approval,omitempty"`
	Profile          string            `json:"profile,omitempty"`
	Limits           Limits            `json:"limits"`
	Status           Status            `json:"status"`
	CurrentIteration int               `json:"current_iteration"`
	MaxIterations    int               `json:"max_iterations"`
	FinishReason     string            `json:"finish_reason,omitempty"`
	StartedAt        time.Time         `json:"started_at,omitzero"`
	CompletedAt      time.Time         `json:"completed_at,omitzero"`
	Duration         time.Duration     `json:"duration"`
	Iterations       []Iteration       `json:"iterations"`

	// InteractionCount counts every model call; LastInteractionAt is the
	// time of the latest.
	InteractionCount  int       `json:"interaction_count"`
	LastInteractionAt time.Time `json:"last_interaction_at,omitzero"`

	Usage         model.Usage `json:"usage"`
	CostUSD       float64     `json:"cost_usd"`
	ToolCallCount int         `json:"tool_call_count"`

	// Outcome, once the session ended or paused.
	Reason  StopReason `json:"reason,omitempty"`
	Detail  string     `json:"detail,omitempty"`
	Answer  string     `json:"answer,omitempty"`
	Partial bool       `json:"partial,omitempty"`
	// Question is what a waiting session asks.
	Question string `json:"question,omitempty"`

	// Conversation is what the model sees next call.
	Conversation []model.Message `json:"-"`

	// PendingCalls are the calls of the latest reply that have no result yet.
	PendingCalls []model.ToolCall `json:"pending_calls,omitempty"`
	// OpenToolCalls are calls started but not finished (after a crash).
	OpenToolCalls []ToolStarted `json:"open_tool_calls,omitempty"`
	// PendingApprovals wait for a decision; Decisions are decisions not yet used.
	PendingApprovals []PendingApproval          `json:"pending_approvals,omitempty"`
	Decisions        map[string]ApprovalDecided `json:"-"`

	Plan *Plan `json:"plan,omitempty"`
	// Steps are the finished steps of a protocol run.
	Steps []StepFinished `json:"steps,omitempty"`
	// Verification is the latest verification run.
	Verification *VerificationFinished      `json:"verification,omitempty"`
	Memory       map[string]json.RawMessage `json:"memory,omitempty"`

	// Modified lists every workspace change, in order.
	Modified []tool.Modification `json:"modified,omitempty"`
	// LastModifiedIteration is the last iteration that changed the workspace.
	LastModifiedIteration int `json:"last_modified_iteration"`
	// StuckDetections counts stuck.detected events; Nudged whether the
	// model has had its one nudge.
	StuckDetections int             `json:"stuck_detections"`
	Warnings        []Warning       `json:"warnings,omitempty"`
	LimitWarnings   map[string]bool `json:"-"`

	// Seq is the sequence number of the last applied event.
	Seq int64 `json:"seq"`

	// recent holds the last finished iterations reduced for stuck detection.
	recent []step

	// PendingAnswer is a final answer the session has not settled yet
	// (iteration.ended carried it; nothing has followed that decides it).
	PendingAnswer string `json:"-"`
	// answerSeq is the seq of the iteration.ended that carried it.
	answerSeq int64
	// WrappedUp: the limit's wrap-up call was made.
	WrappedUp bool `json:"-"`
}

// answerChecked reports whether events followed the pending answer (a
// gate's verdict): settling it again skips the gate.
func (s *State) answerChecked() bool { return s.PendingAnswer != "" && s.Seq > s.answerSeq }

// Fold builds a state from a whole log.
func Fold(events []Event) (*State, error) {
	s := &State{Status: StatusIdle}
	for _, e := range events {
		if err := s.Apply(e); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Apply folds one event into the state. Events must arrive in sequence;
// a gap or a repeat is an error, so a torn or duplicated log is never
// silently accepted.
func (s *State) Apply(e Event) error {
	if e.Seq != s.Seq+1 {
		return fmt.Errorf("session %s: event %d (%s) out of order: expected %d", e.SessionID, e.Seq, e.Type, s.Seq+1)
	}
	if s.Seq > 0 && e.SessionID != s.ID {
		return fmt.Errorf("event %d belongs to session %s, not %s", e.Seq, e.SessionID, s.ID)
	}
	s.Seq = e.Seq
	s.trackSettlement(e)
	switch d := e.Data.(type) {
	case *SessionStarted:
		s.ID = e.SessionID
		s.Task, s.SystemPrompt, s.Model, s.Mode = d.Task, d.SystemPrompt, d.Model, d.Mode
		s.Marker, s.Tools, s.Workspace, s.Labels, s.Limits = d.Marker, d.Tools, d.Workspace, d.Labels, d.Limits
		s.Verify, s.Endpoint, s.Approval, s.Profile = d.Verify, d.Endpoint, d.Approval, d.Profile
		s.MaxIterations = d.Limits.maxIterations()
		s.Status = StatusRunning
		s.StartedAt = e.Time
		if len(d.Messages) > 0 {
			s.Conversation = seededConversation(d.SystemPrompt, d.Messages)
			break
		}
		if d.SystemPrompt != "" {
			s.Conversation = append(s.Conversation, model.Message{Role: model.RoleSystem, Content: d.SystemPrompt})
		}
		s.Conversation = append(s.Conversation, model.Message{Role: model.RoleUser, Content: d.Task})
	case *IterationStarted:
		s.CurrentIteration = d.N
		s.Iterations = append(s.Iterations, Iteration{N: d.N, StartedAt: e.Time, Status: IterationInProgress})
	case *ModelResponded:
		s.InteractionCount++
		s.LastInteractionAt = e.Time
		s.FinishReason = d.FinishReason
		s.Usage = s.Usage.Add(d.Usage)
		s.CostUSD += d.CostUSD
		s.Conversation = append(s.Conversation, model.Message{
			Role: model.RoleAssistant, Content: d.Text, ToolCalls: d.ToolCalls, Reasoning: d.Reasoning,
		})
		s.PendingCalls = append(s.PendingCalls[:0:0], d.ToolCalls...)
		if it := s.current(); it != nil {
			it.Responded = true
			it.Error = "" // an earlier attempt's error was retried away
			it.Usage = it.Usage.Add(d.Usage)
			it.CostUSD += d.CostUSD
			it.Messages = append(it.Messages, MessageRecord{
				ID: msgID(e), Role: model.RoleAssistant, Content: d.Text, Time: e.Time,
			})
			for _, c := range d.ToolCalls {
				it.ToolCalls = append(it.ToolCalls, ToolCallRecord{ID: c.ID, Name: c.Name, Input: c.Arguments, Time: e.Time, Status: ToolPending})
			}
		}
	case *ModelFailed:
		s.InteractionCount++
		s.LastInteractionAt = e.Time
		if it := s.current(); it != nil {
			it.Error = d.Error
			if d.Timeout || d.Malformed {
				it.Faults++
			}
		}
	case *ToolStarted:
		s.ToolCallCount++
		s.OpenToolCalls = append(s.OpenToolCalls, *d)
		if r := s.toolRecord(d.CallID); r != nil {
			r.Time = e.Time
			r.Input = d.Input
		}
	case *ToolFinished:
		s.closeToolCall(d.CallID)
		for i, c := range s.PendingCalls {
			if c.ID == d.CallID {
				s.PendingCalls = append(s.PendingCalls[:i:i], s.PendingCalls[i+1:]...)
				break
			}
		}
		s.Conversation = append(s.Conversation, model.Message{
			Role: model.RoleTool, Content: d.Output, ToolCallID: d.CallID, ToolName: d.Name, IsError: d.IsError,
		})
		if len(d.Modified) > 0 {
			s.Modified = append(s.Modified, d.Modified...)
			s.LastModifiedIteration = s.CurrentIteration
		}
		if it := s.current(); it != nil {
			it.Messages = append(it.Messages, MessageRecord{ID: msgID(e), Role: model.RoleTool, Content: d.Output, Time: e.Time, ToolCallID: d.CallID})
			r := s.toolRecord(d.CallID)
			if r == nil {
				it.ToolCalls = append(it.ToolCalls, ToolCallRecord{ID: d.CallID, Name: d.Name, Time: e.Time})
				r = &it.ToolCalls[len(it.ToolCalls)-1]
			}
			r.Output, r.Duration, r.Modified = d.Output, time.Duration(d.DurationMS)*time.Millisecond, d.Modified
			r.Status = ToolSuccess
			if d.IsError {
				r.Status, r.Error = ToolError, d.Output
			}
			r.Failed = d.Failed || d.Refused || d.Unknown
		}
	case *MessageAdded:
		s.Conversation = append(s.Conversation, model.Message{Role: d.Role, Content: d.Content})
		if it := s.current(); it != nil {
			it.Messages = append(it.Messages, MessageRecord{ID: msgID(e), Role: d.Role, Content: d.Content, Time: e.Time, Kind: d.Kind})
		}
		if d.Kind == KindUser {
			s.recent = s.recent[:0] // a person spoke: repetition before it no longer counts
		}
		if d.Kind == KindCorrection {
			if it := s.current(); it != nil {
				it.Correction = true
			}
		}
		if d.Key != "" {
			if s.LimitWarnings == nil {
				s.LimitWarnings = map[string]bool{}
			}
			s.LimitWarnings[d.Key] = true
		}
	case *IterationEnded:
		if it := s.current(); it != nil && it.N == d.N {
			it.EndedAt = e.Time
			it.Duration = e.Time.Sub(it.StartedAt)
			it.Status = d.Status
			if d.Error != "" {
				it.Error = d.Error
			}
			if len(s.recent) >= s.recentCap() {
				s.recent = append(s.recent[:0], s.recent[1:]...)
			}
			s.recent = append(s.recent, stepOf(it))
		}
	case *ApprovalRequested:
		s.PendingApprovals = append(s.PendingApprovals, PendingApproval{CallID: d.CallID, Name: d.Name, Input: d.Input, ArgsHash: d.ArgsHash})
	case *ApprovalDecided:
		for i, p := range s.PendingApprovals {
			if p.CallID == d.CallID {
				s.PendingApprovals = append(s.PendingApprovals[:i:i], s.PendingApprovals[i+1:]...)
				break
			}
		}
		if s.Decisions == nil {
			s.Decisions = map[string]ApprovalDecided{}
		}
		s.Decisions[d.CallID] = *d
	case *PlanUpdated:
		s.Plan = &Plan{Goal: d.Goal, Status: d.Status, Steps: append([]PlanStep(nil), d.Steps...), Reason: d.Reason}
	case *MemorySet:
		if d.Deleted {
			delete(s.Memory, d.Key)
		} else {
			if s.Memory == nil {
				s.Memory = map[string]json.RawMessage{}
			}
			s.Memory[d.Key] = d.Value
		}
	case *StuckDetected:
		s.StuckDetections++
	case *VerificationFinished:
		s.Verification = d
	case *StepFinished:
		s.Steps = append(s.Steps, *d)
	case *SessionPaused:
		s.Status, s.Reason, s.Detail = StatusPaused, d.Reason, d.Detail
	case *SessionWaiting:
		s.Status, s.Reason, s.Question = StatusWaiting, d.Reason, d.Question
	case *ConversationCondensed:
		s.Conversation = condensed(s.Conversation, d)
	case *SessionResumed:
		s.Status, s.Reason, s.Detail, s.Question = StatusRunning, "", "", ""
		if it := s.current(); it != nil {
			it.Faults = 0 // a person resumed: the retry budget starts again
		}
	case *Warning:
		s.Warnings = append(s.Warnings, *d)
	case *SessionEnded:
		s.Status, s.Reason, s.Detail = d.Status, d.Reason, d.Detail
		s.Answer, s.Partial = d.Answer, d.Partial
		s.CompletedAt = e.Time
		s.Duration = e.Time.Sub(s.StartedAt)
		if it := s.current(); it != nil && it.Status == IterationInProgress {
			it.Status, it.EndedAt, it.Duration = IterationFailed, e.Time, e.Time.Sub(it.StartedAt)
		}
	default:
		return fmt.Errorf("session %s: event %d: %w %T", e.SessionID, e.Seq, ErrUnknownEvent, e.Data)
	}
	return nil
}

func (s *State) current() *Iteration {
	if len(s.Iterations) == 0 {
		return nil
	}
	return &s.Iterations[len(s.Iterations)-1]
}

func (s *State) toolRecord(id string) *ToolCallRecord {
	it := s.current()
	if it == nil {
		return nil
	}
	for i := range it.ToolCalls {
		if it.ToolCalls[i].ID == id {
			return &it.ToolCalls[i]
		}
	}
	return nil
}

func (s *State) closeToolCall(id string) {
	for i, c := range s.OpenToolCalls {
		if c.CallID == id {
			s.OpenToolCalls = append(s.OpenToolCalls[:i:i], s.OpenToolCalls[i+1:]...)
			return
		}
	}
}

func msgID(e Event) string { return e.SessionID + "-" + strconv.FormatInt(e.Seq, 10) }
