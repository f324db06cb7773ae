package loop

import (
	"context"
	"encoding/json"
	"fmt"
)

// Allowances are tool calls a person allowed for the rest of the session
// when approving one: the exact tool and arguments, known by their
// ArgsHash. A later call with the same hash runs without asking, until the
// allowance is revoked. Both are events, so the log says who allowed what,
// when, and until when.
type Allowances struct {
	Allowed map[string]Allowance `json:"allowed,omitempty"` // by ArgsHash
}

// Allowance is one call allowed for the rest of the session.
type Allowance struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input,omitempty"`
	Since int64           `json:"since"` // the seq of the decision
}

// ApprovalRevoked ends an allowance: the call asks again.
type ApprovalRevoked struct {
	ArgsHash string `json:"args_hash"`
	Name     string `json:"name"`
	Reason   string `json:"reason,omitempty"`
}

// TypeApprovalRevoked is the event of an allowance revoked.
const TypeApprovalRevoked EventType = "approval.revoked"

// EventType implements Payload.
func (*ApprovalRevoked) EventType() EventType { return TypeApprovalRevoked }

func (a *Allowances) apply(e Event) {
	switch d := e.Data.(type) {
	case *ApprovalDecided:
		if !d.ForSession || !d.Approved || len(d.EditedInput) > 0 {
			return // an edited call is allowed as edited, once
		}
		if a.Allowed == nil {
			a.Allowed = map[string]Allowance{}
		}
		a.Allowed[d.ArgsHash] = Allowance{Name: d.Name, Input: d.Input, Since: e.Seq}
	case *ApprovalRevoked:
		delete(a.Allowed, d.ArgsHash)
	}
}

// allows reports whether a person allowed this exact call for the rest of
// the session.
func (a *Allowances) allows(name, hash string) bool {
	al, ok := a.Allowed[hash]
	return ok && al.Name == name
}

// Revoke ends an allowance of the running session from its next step;
// calls it runs before then still run unasked.
func (s *Session) Revoke(hash, reason string) {
	s.mu.Lock()
	s.revoked = append(s.revoked, ApprovalRevoked{ArgsHash: hash, Reason: reason})
	s.mu.Unlock()
}

// takeRevoked returns the revocations Revoke collected that still name an
// allowance, as events, and forgets them.
func (s *Session) takeRevoked() []Payload {
	s.mu.Lock()
	r := s.revoked
	s.revoked = nil
	s.mu.Unlock()
	var out []Payload
	for _, rv := range r {
		if al, ok := s.state.Allowed[rv.ArgsHash]; ok {
			rv.Name = al.Name
			out = append(out, &rv)
		}
	}
	return out
}

// revokeEvents is what revoking an allowance of a stopped session records.
func revokeEvents(id string, d ApprovalDecision) func(s *Session, st *State) ([]Payload, error) {
	return func(s *Session, st *State) ([]Payload, error) {
		al, ok := st.Allowed[d.ArgsHash]
		if !ok {
			return nil, fmt.Errorf("session %s allows no call with arguments %q for the session", id, d.ArgsHash)
		}
		return []Payload{&ApprovalRevoked{ArgsHash: d.ArgsHash, Name: al.Name, Reason: d.Reason}}, nil
	}
}

// RecordRevoke revokes an allowance of a session no process runs.
func (r *Runner) RecordRevoke(ctx context.Context, id string, d ApprovalDecision) (*State, error) {
	return r.recorded(r.record(ctx, id, revokeEvents(id, d), false))
}
