package loop

import "encoding/json"

// PlanState is the model's plan, when it made one (or a protocol's).
type PlanState struct {
	Plan *Plan `json:"plan,omitempty"`
}

func (p *PlanState) apply(e Event) {
	switch d := e.Data.(type) {
	case *PlanUpdated:
		p.Plan = &Plan{Goal: d.Goal, Status: d.Status, Steps: append([]PlanStep(nil), d.Steps...), Reason: d.Reason, Current: CurrentStep(d.Steps)}
		if p.Plan.Status == PlanActive || p.Plan.Status == "" { // an older log's
			p.Plan.Status = PlanPlanning
			for _, s := range d.Steps {
				if s.Status != StepPending && s.Status != "" {
					p.Plan.Status = PlanExecuting
				}
			}
		}
	case *SessionWaiting:
		// The plan waits with the session for a person's answer.
		if p.Plan != nil && p.Plan.Status.Open() && d.Reason == ReasonQuestion {
			p.Plan.Status = PlanWaitingForUser
		}
	case *SessionResumed:
		if p.Plan != nil && p.Plan.Status == PlanWaitingForUser {
			p.Plan.Status = PlanExecuting
		}
	}
}

// MemoryState is what the model asked the session to remember.
type MemoryState struct {
	Memory map[string]json.RawMessage `json:"memory,omitempty"`
}

func (m *MemoryState) apply(e Event) {
	d, ok := e.Data.(*MemorySet)
	if !ok {
		return
	}
	if d.Deleted {
		delete(m.Memory, d.Key)
		return
	}
	if m.Memory == nil {
		m.Memory = map[string]json.RawMessage{}
	}
	m.Memory[d.Key] = d.Value
}

// ProtocolState is a protocol run's finished steps.
type ProtocolState struct {
	Steps []StepFinished `json:"steps,omitempty"`
}

func (p *ProtocolState) apply(e Event) {
	if d, ok := e.Data.(*StepFinished); ok {
		p.Steps = append(p.Steps, *d)
	}
}

// VerificationState is the latest verification run.
type VerificationState struct {
	Verification *VerificationFinished `json:"verification,omitempty"`
}

func (v *VerificationState) apply(e Event) {
	if d, ok := e.Data.(*VerificationFinished); ok {
		v.Verification = d
	}
}
