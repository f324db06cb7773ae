package loop

import (
	"time"

	"github.com/agentloop/agentloop/model"
)

// Totals are the session's counters: iterations, model calls, tokens,
// cost and tool calls.
type Totals struct {
	CurrentIteration int `json:"current_iteration"`
	// FinishReason is the latest reply's.
	FinishReason string `json:"finish_reason,omitempty"`
	// InteractionCount counts every model call; LastInteractionAt is the
	// time of the latest.
	InteractionCount  int         `json:"interaction_count"`
	LastInteractionAt time.Time   `json:"last_interaction_at,omitzero"`
	Usage             model.Usage `json:"usage"`
	CostUSD           float64     `json:"cost_usd"`
	ToolCallCount     int         `json:"tool_call_count"`
}

func (t *Totals) apply(e Event) {
	switch d := e.Data.(type) {
	case *IterationStarted:
		t.CurrentIteration = d.N
	case *ModelResponded:
		t.InteractionCount++
		t.LastInteractionAt = e.Time
		t.FinishReason = d.FinishReason
		t.Usage = t.Usage.Add(d.Usage)
		t.CostUSD += d.CostUSD
	case *ModelFailed:
		t.InteractionCount++
		t.LastInteractionAt = e.Time
	case *ToolStarted:
		t.ToolCallCount++
	case *ConversationCondensed:
		t.condensed(e, d)
	}
}
