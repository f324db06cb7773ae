package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// EventType names what happened. Types are stable strings, stored and sent
// over the wire.
type EventType string

// The event types of a session log.
const (
	TypeSessionStarted    EventType = "session.started"
	TypeIterationStarted  EventType = "iteration.started"
	TypeModelResponded    EventType = "model.responded"
	TypeModelFailed       EventType = "model.failed"
	TypeModelSwitched     EventType = "model.switched"
	TypeToolStarted       EventType = "tool.started"
	TypeToolFinished      EventType = "tool.finished"
	TypeMessageAdded      EventType = "message.added"
	TypeIterationEnded    EventType = "iteration.ended"
	TypeApprovalRequested EventType = "approval.requested"
	TypeApprovalDecided   EventType = "approval.decided"
	TypePlanUpdated       EventType = "plan.updated"
	TypeMemorySet         EventType = "memory.set"
	TypeStuckDetected     EventType = "stuck.detected"
	TypeSessionPaused     EventType = "session.paused"
	TypeSessionWaiting    EventType = "session.waiting"
	TypeSessionResumed    EventType = "session.resumed"
	TypeWarning           EventType = "warning"
	TypeSessionEnded      EventType = "session.ended"
)

// Payload is the typed body of an event.
type Payload interface {
	EventType() EventType
}

// Event is one entry of a session's append-only log.
type Event struct {
	SessionID string
	// Seq numbers the events of a session from 1 with no gaps. Watchers
	// resume from the last Seq they saw.
	Seq     int64
	Type    EventType
	Version int
	Time    time.Time
	Data    Payload
}

// ErrUnknownEvent is returned (wrapped) for an event type this build does not know.
var ErrUnknownEvent = errors.New("unknown event type")

// ErrFutureVersion is returned (wrapped) for an event written by a newer
// version of agentloop: it fails loudly rather than half-parsing.
var ErrFutureVersion = errors.New("event version newer than this build understands")

type payloadInfo struct {
	version int
	make    func() Payload
}

// payloads is the event catalogue: every event type with its current
// schema version, in one table (no registration from init functions).
var payloads = map[EventType]payloadInfo{
	TypeSessionStarted:    {1, func() Payload { return new(SessionStarted) }},
	TypeIterationStarted:  {1, func() Payload { return new(IterationStarted) }},
	TypeModelResponded:    {1, func() Payload { return new(ModelResponded) }},
	TypeModelFailed:       {1, func() Payload { return new(ModelFailed) }},
	TypeModelSwitched:     {1, func() Payload { return new(ModelSwitched) }},
	TypeToolStarted:       {1, func() Payload { return new(ToolStarted) }},
	TypeToolFinished:      {1, func() Payload { return new(ToolFinished) }},
	TypeMessageAdded:      {1, func() Payload { return new(MessageAdded) }},
	TypeIterationEnded:    {1, func() Payload { return new(IterationEnded) }},
	TypeApprovalRequested: {1, func() Payload { return new(ApprovalRequested) }},
	TypeApprovalDecided:   {1, func() Payload { return new(ApprovalDecided) }},
	TypeApprovalRevoked:   {1, func() Payload { return new(ApprovalRevoked) }},
	TypePlanUpdated:       {1, func() Payload { return new(PlanUpdated) }},
	TypeMemorySet:         {1, func() Payload { return new(MemorySet) }},
	TypeStuckDetected:     {1, func() Payload { return new(StuckDetected) }},
	TypeSessionPaused:     {1, func() Payload { return new(SessionPaused) }},
	TypeSessionWaiting:    {1, func() Payload { return new(SessionWaiting) }},
	TypeSessionResumed:    {1, func() Payload { return new(SessionResumed) }},
	TypeWarning:           {1, func() Payload { return new(Warning) }},
	TypeSessionEnded:      {1, func() Payload { return new(SessionEnded) }},

	TypeConversationCondensed: {1, func() Payload { return new(ConversationCondensed) }},
	TypeStepFinished:          {1, func() Payload { return new(StepFinished) }},
	TypeVerificationFinished:  {1, func() Payload { return new(VerificationFinished) }},
	TypeWorkspaceCheckpointed: {1, func() Payload { return new(WorkspaceCheckpointed) }},
	TypeSessionRewound:        {1, func() Payload { return new(SessionRewound) }},
}

// EventTypes lists every event type of the catalogue, sorted.
func EventTypes() []EventType {
	out := make([]EventType, 0, len(payloads))
	for t := range payloads {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// NewEvent wraps a payload with its type and current version.
func NewEvent(sessionID string, seq int64, at time.Time, p Payload) Event {
	t := p.EventType()
	return Event{SessionID: sessionID, Seq: seq, Type: t, Version: payloads[t].version, Time: at, Data: p}
}

// EncodeData returns the JSON encoding of the payload, as stored: what
// json.Marshal writes for it.
func (e Event) EncodeData() ([]byte, error) { return e.AppendData(nil) }

// AppendData appends the JSON encoding of the payload to b, as EncodeData
// returns it.
func (e Event) AppendData(b []byte) ([]byte, error) {
	if out, ok := appendPayload(b, e.Data); ok {
		return out, nil
	}
	m, err := json.Marshal(e.Data)
	if err != nil {
		return b, fmt.Errorf("session %s: encode event %d (%s): %w", e.SessionID, e.Seq, e.Type, err)
	}
	if b == nil {
		return m, nil
	}
	return append(b, m...), nil
}

// DecodeEvent rebuilds an event from its stored parts. Unknown types and
// versions newer than this build are errors.
func DecodeEvent(sessionID string, seq int64, typ EventType, version int, at time.Time, data []byte) (Event, error) {
	info, ok := payloads[typ]
	if !ok {
		return Event{}, fmt.Errorf("session %s: event %d: %w %q — was it written by a newer agentloop?", sessionID, seq, ErrUnknownEvent, typ)
	}
	if version > info.version || version < 1 {
		return Event{}, fmt.Errorf("session %s: event %d (%s): %w: version %d, this build reads up to %d — upgrade agentloop", sessionID, seq, typ, ErrFutureVersion, version, info.version)
	}
	p := info.make()
	if err := json.Unmarshal(data, p); err != nil {
		return Event{}, fmt.Errorf("session %s: event %d (%s): corrupt payload: %w", sessionID, seq, typ, err)
	}
	return Event{SessionID: sessionID, Seq: seq, Type: typ, Version: version, Time: at, Data: p}, nil
}

type wireEvent struct {
	SessionID string          `json:"session_id"`
	Seq       int64           `json:"seq"`
	Type      EventType       `json:"type"`
	Version   int             `json:"v"`
	Time      time.Time       `json:"time"`
	Data      json.RawMessage `json:"data"`
}

// MarshalJSON writes the event in its wire form.
func (e Event) MarshalJSON() ([]byte, error) {
	data, err := e.EncodeData()
	if err != nil {
		return nil, err
	}
	return json.Marshal(wireEvent{e.SessionID, e.Seq, e.Type, e.Version, e.Time, data})
}

// UnmarshalJSON reads the wire form, refusing unknown types and versions.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	ev, err := DecodeEvent(w.SessionID, w.Seq, w.Type, w.Version, w.Time, w.Data)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}
