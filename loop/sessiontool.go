package loop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/model"
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
	// Failed says the model could not do the task: the session waits for
	// a person instead of completing.
	Failed bool
}

// EventType makes Finish a Payload; it is never stored.
func (*Finish) EventType() EventType { return "" }

// SessionFunc builds a SessionTool from a spec and a function. Its effect
// is read and it is idempotent: its only effects are the events it returns,
// recorded with its result, so a call a crash interrupted changed nothing.
func SessionFunc(spec model.ToolSpec, run func(st *State, args json.RawMessage) (tool.Result, []Payload, error)) SessionTool {
	return &sessionFunc{spec: spec, run: run}
}

type sessionFunc struct {
	spec model.ToolSpec
	run  func(st *State, args json.RawMessage) (tool.Result, []Payload, error)
}

func (t *sessionFunc) Spec() model.ToolSpec { return t.spec }
func (t *sessionFunc) Effect() tool.Effect  { return tool.EffectRead }
func (t *sessionFunc) Idempotent() bool     { return true }

// Call refuses: a session tool needs the session's state.
func (t *sessionFunc) Call(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, fmt.Errorf("%s works on a session and runs only inside the agentloop runner", t.spec.Name)
}

func (t *sessionFunc) CallSession(_ context.Context, st *State, args json.RawMessage) (tool.Result, []Payload, error) {
	if st == nil {
		st = &State{}
	}
	return t.run(st, args)
}
