package server

import (
	"encoding/json"
	"net/http"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

// Control is the body of pause, resume, terminate and reply.
type Control struct {
	Reason string `json:"reason"`
	Note   string `json:"note"`
	Text   string `json:"text"`
}

// ControlResult is what a control did.
type ControlResult struct {
	ID      string      `json:"id"`
	Applied bool        `json:"applied"`
	Outcome string      `json:"outcome"`
	Status  loop.Status `json:"status,omitempty"`
	// Request is the durable request another process will honour.
	Request *store.Control `json:"request,omitempty"`
}

func (s *Server) control(w http.ResponseWriter, r *http.Request, act func(c service.Caller, id string, b Control) (*service.Result, error)) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	var b Control
	if err := s.decode(w, r, &b, true); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := act(callerOf(r.Context()), id, b)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := ControlResult{ID: res.ID, Applied: res.Applied, Outcome: res.Outcome, Request: res.Request}
	status := http.StatusAccepted
	if res.State != nil {
		out.Status, status = res.State.Status, http.StatusOK
	} else if res.Session != nil {
		out.Status = loop.StatusRunning
	}
	writeJSON(w, status, out)
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, func(c service.Caller, id string, b Control) (*service.Result, error) {
		return s.svc.Pause(r.Context(), c, id, firstSet(b.Reason, b.Note, b.Text))
	})
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, func(c service.Caller, id string, b Control) (*service.Result, error) {
		return s.svc.Resume(r.Context(), c, id, firstSet(b.Note, b.Text, b.Reason))
	})
}

func (s *Server) terminate(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, func(c service.Caller, id string, b Control) (*service.Result, error) {
		return s.svc.Terminate(r.Context(), c, id, firstSet(b.Reason, b.Text, b.Note))
	})
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, func(c service.Caller, id string, b Control) (*service.Result, error) {
		return s.svc.Reply(r.Context(), c, id, firstSet(b.Text, b.Note, b.Reason))
	})
}

// Decision is the body of POST /v1/sessions/{id}/approvals/{call}.
type Decision struct {
	Approve  *bool           `json:"approve"`
	ArgsHash string          `json:"args_hash"`
	Reason   string          `json:"reason"`
	Args     json.RawMessage `json:"arguments"`
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	var b Decision
	if err := s.decode(w, r, &b, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.Approve == nil {
		problem(w, http.StatusBadRequest, `say "approve": true or false (and the "args_hash" of the pending approval)`)
		return
	}
	d := loop.ApprovalDecision{CallID: r.PathValue("call"), ArgsHash: b.ArgsHash, Approved: *b.Approve, Reason: b.Reason, EditedInput: b.Args}
	res, err := s.svc.Decide(r.Context(), callerOf(r.Context()), id, d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := ControlResult{ID: res.ID, Applied: res.Applied, Outcome: res.Outcome, Request: res.Request}
	if res.State != nil {
		out.Status = res.State.Status
	} else if res.Session != nil {
		out.Status = loop.StatusRunning
	}
	writeJSON(w, http.StatusOK, out)
}
