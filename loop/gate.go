package loop

import (
	"context"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// Gate decides whether a final answer ends the session. Protocols use it to
// walk the model through their steps; the runner records whatever events
// the gate returns, so a gate keeps no state of its own — it reads the
// session state, which is the fold of the log.
type Gate interface {
	// Start returns events to record right after session.started: for a
	// protocol, its plan and the first step's instruction.
	Start(st *State) []Payload
	// Answer is called when the model gives a final answer. Accept ends
	// the session (after verification); otherwise the events say what
	// happens next (a message to the model, or a question to a person).
	Answer(ctx context.Context, st *State, answer string) GateDecision
	// Reply is called when a person answers a session the gate made wait
	// (reason confirmation).
	Reply(ctx context.Context, st *State, reply string) GateDecision
}

// GateDecision is a gate's verdict. Events may be *MessageAdded,
// *PlanUpdated, *StepFinished, *SessionWaiting and *Warning.
type GateDecision struct {
	Accept bool
	Events []Payload
}

// ReasonConfirmation is why a session waits for a person to confirm a step.
const ReasonConfirmation StopReason = "confirmation"

// StepFinished records one finished step of a protocol: its output and
// the tools called during it.
type StepFinished struct {
	Protocol  string   `json:"protocol"`
	StepID    string   `json:"step_id"`
	Title     string   `json:"title"`
	Output    string   `json:"output"`
	ToolCalls []string `json:"tool_calls,omitempty"`
	Iteration int      `json:"iteration"`
	Confirmed bool     `json:"confirmed,omitempty"`
}

// TypeStepFinished is the event of a finished protocol step.
const TypeStepFinished EventType = "step.finished"

// EventType implements Payload.
func (*StepFinished) EventType() EventType { return TypeStepFinished }

// KindProtocol marks messages a protocol adds (step instructions, feedback).
const KindProtocol MessageKind = "protocol"

// gateAnswer runs the gate on a final answer; accepted reports whether the
// session may end.
func (s *Session) gateAnswer(ctx context.Context, answer string) (accepted bool) {
	g := s.env.Gate
	if g == nil {
		return true
	}
	d := g.Answer(ctx, s.state, answer)
	for _, p := range d.Events {
		s.emit(p)
	}
	return d.Accept
}

// LastAnswer is the model's latest non-empty text in this session: the
// answer, or the partial answer of a session a limit or a person stopped.
// A conversation the session started from is not the model's answer, so
// its messages are never returned.
func (s *State) LastAnswer() string {
	for i := len(s.Iterations) - 1; i >= 0; i-- {
		msgs := s.Iterations[i].Messages
		for j := len(msgs) - 1; j >= 0; j-- {
			if m := msgs[j]; m.Role == model.RoleAssistant && strings.TrimSpace(m.Content) != "" {
				return m.Content
			}
		}
	}
	return ""
}
