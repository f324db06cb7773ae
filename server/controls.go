package server

import (
	"net/http"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
)

// controlResult is the answer to a control or a decision.
func controlResult(res *service.Result) api.ControlResult {
	out := api.ControlResult{ID: res.ID, Applied: res.Applied, Outcome: res.Outcome}
	if res.Warning != "" {
		out.Outcome += "; " + res.Warning
	}
	if c := res.Request; c != nil {
		out.Request = &api.ControlRequest{ID: c.ID, SessionID: c.SessionID, Kind: string(c.Kind), Text: c.Text, Decision: c.Decision,
			Subject: c.Subject, CreatedAt: c.CreatedAt, Done: c.Done, Outcome: c.Outcome}
	}
	if res.State != nil {
		out.Status = string(res.State.Status)
	} else if res.Session != nil {
		out.Status = string(loop.StatusRunning)
	}
	return out
}

// control runs one control; mayStart says it can set a stopped session
// running again, so it counts against the running quota.
func (s *Server) control(w http.ResponseWriter, r *http.Request, mayStart bool, act func(c service.Caller, id string, b api.Control) (*service.Result, error)) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	var b api.Control
	if err := s.decode(w, r, &b, true); err != nil {
		s.fail(w, r, err)
		return
	}
	unlock := func() {}
	if mayStart {
		if unlock, ok = s.roomToRun(w, r, id); !ok {
			return
		}
	}
	defer unlock()
	res, err := act(callerOf(r.Context()), id, b)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusAccepted
	if res.State != nil {
		status = http.StatusOK
	}
	writeJSON(w, status, controlResult(res))
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, false, func(c service.Caller, id string, b api.Control) (*service.Result, error) {
		return s.svc.Pause(r.Context(), c, id, firstSet(b.Reason, b.Note, b.Text))
	})
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, true, func(c service.Caller, id string, b api.Control) (*service.Result, error) {
		return s.svc.Resume(r.Context(), c, id, firstSet(b.Note, b.Text, b.Reason))
	})
}

func (s *Server) terminate(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, false, func(c service.Caller, id string, b api.Control) (*service.Result, error) {
		return s.svc.Terminate(r.Context(), c, id, firstSet(b.Reason, b.Text, b.Note))
	})
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, true, func(c service.Caller, id string, b api.Control) (*service.Result, error) {
		return s.svc.Reply(r.Context(), c, id, firstSet(b.Text, b.Note, b.Reason))
	})
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	var b api.Decision
	if err := s.decode(w, r, &b, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.Approve == nil {
		problem(w, http.StatusBadRequest, `say "approve": true or false (and the "args_hash" of the pending approval)`)
		return
	}
	unlock, ok := s.roomToRun(w, r, id)
	if !ok {
		return
	}
	defer unlock()
	d := loop.ApprovalDecision{CallID: r.PathValue("call"), ArgsHash: b.ArgsHash, Approved: *b.Approve, Reason: b.Reason, EditedInput: b.Arguments, ForSession: b.ForSession}
	res, err := s.svc.Decide(r.Context(), callerOf(r.Context()), id, d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, controlResult(res))
}

// revokeAllowance ends an allowance a person gave with for_session: the
// call asks again (from the next step, when the session is running).
func (s *Server) revokeAllowance(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	d := loop.ApprovalDecision{ArgsHash: r.PathValue("hash"), Revoke: true, Reason: r.URL.Query().Get("reason")}
	res, err := s.svc.Decide(r.Context(), callerOf(r.Context()), id, d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, controlResult(res))
}
