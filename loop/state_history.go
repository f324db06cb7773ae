package loop

import (
	"strconv"
	"time"

	"github.com/agentloop/agentloop/model"
)

// History is the session as people read it: every iteration with its
// messages and tool calls, durations, usage and errors.
type History struct {
	Iterations []Iteration `json:"iterations"`
}

func (h *History) apply(e Event) {
	switch d := e.Data.(type) {
	case *IterationStarted:
		h.Iterations = appendSteady(h.Iterations, Iteration{N: d.N, StartedAt: e.Time, Status: IterationInProgress}, 4)
	case *ModelResponded:
		it := h.current()
		if it == nil {
			return
		}
		it.Responded = true
		it.Error = "" // an earlier attempt's error was retried away
		it.Usage = it.Usage.Add(d.Usage)
		it.CostUSD += d.CostUSD
		if it.Messages == nil {
			// Room for the reply and a result for each call it makes.
			it.Messages = make([]MessageRecord, 0, 1+len(d.ToolCalls))
		}
		it.Messages = append(it.Messages, MessageRecord{ID: msgID(e), Role: model.RoleAssistant, Content: d.Text, Time: e.Time})
		if it.ToolCalls == nil && len(d.ToolCalls) > 0 {
			it.ToolCalls = make([]ToolCallRecord, 0, len(d.ToolCalls))
		}
		for _, c := range d.ToolCalls {
			it.ToolCalls = append(it.ToolCalls, ToolCallRecord{ID: c.ID, Name: c.Name, Input: c.Arguments, Time: e.Time, Status: ToolPending})
		}
	case *ModelFailed:
		if it := h.current(); it != nil {
			it.Error = d.Error
			if d.Timeout || d.Malformed {
				it.Faults++
			}
		}
	case *ToolStarted:
		if r := h.toolRecord(d.CallID); r != nil {
			r.Time = e.Time
			r.Input = d.Input
		}
	case *ToolFinished:
		it := h.current()
		if it == nil {
			return
		}
		it.Messages = append(it.Messages, MessageRecord{ID: msgID(e), Role: model.RoleTool, Content: d.Output, Time: e.Time, ToolCallID: d.CallID})
		r := h.toolRecord(d.CallID)
		if r == nil {
			it.ToolCalls = append(it.ToolCalls, ToolCallRecord{ID: d.CallID, Name: d.Name, Time: e.Time})
			r = &it.ToolCalls[len(it.ToolCalls)-1]
		}
		r.Output, r.Duration, r.Modified = d.Output, Duration(time.Duration(d.DurationMS)*time.Millisecond), d.Modified
		r.Status = ToolSuccess
		if d.IsError {
			r.Status, r.Error = ToolError, d.Output
		}
		r.Failed = d.Failed || d.Refused || d.Unknown
	case *MessageAdded:
		if it := h.current(); it != nil {
			it.Messages = append(it.Messages, MessageRecord{ID: msgID(e), Role: d.Role, Content: d.Content, Time: e.Time, Kind: d.Kind})
			if d.Kind == KindCorrection {
				it.Correction = true
			}
		}
	case *IterationEnded:
		if it := h.current(); it != nil && it.N == d.N {
			it.EndedAt = e.Time
			it.Duration = Duration(e.Time.Sub(it.StartedAt))
			it.Status = d.Status
			if d.Error != "" {
				it.Error = d.Error
			}
		}
	case *SessionResumed:
		if it := h.current(); it != nil {
			it.Faults = 0 // a person resumed: the retry budget starts again
		}
	case *SessionEnded:
		if it := h.current(); it != nil && it.Status == IterationInProgress {
			it.Status, it.EndedAt, it.Duration = IterationFailed, e.Time, Duration(e.Time.Sub(it.StartedAt))
		}
	}
}

// current is the latest live iteration: steps a rewind set aside are
// skipped, so what follows a rewind belongs to the step it went back to.
func (h *History) current() *Iteration {
	for i := len(h.Iterations) - 1; i >= 0; i-- {
		if !h.Iterations[i].Rewound {
			return &h.Iterations[i]
		}
	}
	return nil
}

func (h *History) toolRecord(id string) *ToolCallRecord {
	it := h.current()
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

func msgID(e Event) string { return e.SessionID + "-" + strconv.FormatInt(e.Seq, 10) }
