package loop

import "github.com/agentloop/agentloop/model"

// Turn is the bookkeeping of the reply being worked through: its calls
// still without a result, calls started but not finished (after a crash),
// and approvals asked for and decided.
type Turn struct {
	// PendingCalls are the calls of the latest reply that have no result yet.
	PendingCalls []model.ToolCall `json:"pending_calls,omitempty"`
	// OpenToolCalls are calls started but not finished (after a crash).
	OpenToolCalls []ToolStarted `json:"open_tool_calls,omitempty"`
	// PendingApprovals wait for a decision; Decisions are decisions not yet used.
	PendingApprovals []PendingApproval          `json:"pending_approvals,omitempty"`
	Decisions        map[string]ApprovalDecided `json:"-"`
}

func (t *Turn) apply(e Event) {
	switch d := e.Data.(type) {
	case *ModelResponded:
		t.PendingCalls = append(t.PendingCalls[:0:0], d.ToolCalls...)
	case *ToolStarted:
		t.OpenToolCalls = append(t.OpenToolCalls, *d)
	case *ToolFinished:
		for i, c := range t.OpenToolCalls {
			if c.CallID == d.CallID {
				t.OpenToolCalls = append(t.OpenToolCalls[:i:i], t.OpenToolCalls[i+1:]...)
				break
			}
		}
		for i, c := range t.PendingCalls {
			if c.ID == d.CallID {
				t.PendingCalls = append(t.PendingCalls[:i:i], t.PendingCalls[i+1:]...)
				break
			}
		}
	case *ApprovalRequested:
		t.PendingApprovals = append(t.PendingApprovals, PendingApproval{CallID: d.CallID, Name: d.Name, Input: d.Input, ArgsHash: d.ArgsHash})
	case *ApprovalDecided:
		for i, p := range t.PendingApprovals {
			if p.CallID == d.CallID {
				t.PendingApprovals = append(t.PendingApprovals[:i:i], t.PendingApprovals[i+1:]...)
				break
			}
		}
		if t.Decisions == nil {
			t.Decisions = map[string]ApprovalDecided{}
		}
		t.Decisions[d.CallID] = *d
	}
}
