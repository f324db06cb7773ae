package loop

import (
	"context"
	"encoding/json"

	"github.com/agentloop/agentloop/tool"
)

// SessionTool is a tool that works on the session itself: a plan, a
// memory, a question to a person, a final answer. It reads the state and
// returns events for the runner to record after its result, so everything
// it changes is in the log like everything else.
//
// Allowed payloads: *PlanUpdated, *MemorySet, *Warning, *SessionWaiting
// (the session stops until a person replies), and *Finish (the session
// ends with an answer once the tool's result is recorded).
type SessionTool interface {
	tool.Tool
	CallSession(ctx context.Context, st *State, args json.RawMessage) (tool.Result, []Payload, error)
}

// Finish is returned by a SessionTool to end the session with an answer.
// It is not an event: the runner records the iteration's end and
// session.ended for it.
type Finish struct {
	Answer string
}

// EventType makes Finish a Payload; it is never stored.
func (*Finish) EventType() EventType { return "" }
