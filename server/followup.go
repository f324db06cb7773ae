package server

import (
	"net/http"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
)

// followUp starts a session that finishes what an ended one left: the
// plan's unfinished steps and the checks that still fail, in the same
// workspace, with the same model, checks and approval unless the body
// says otherwise. The new session carries follow_up_of=ID; the ended one
// finds its follow-ups by that label.
func (s *Server) followUp(w http.ResponseWriter, r *http.Request) {
	var req api.StartRequest
	if err := s.decode(w, r, &req, true); err != nil {
		s.fail(w, r, err)
		return
	}
	c := callerOf(r.Context())
	st, err := s.svc.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	task, ok := st.FollowUp()
	switch {
	case !ok && !st.Status.Finished():
		s.fail(w, r, &service.Error{Kind: service.ErrConflict, Msg: "session " + st.ID + " is " + string(st.Status) + ": a follow-up starts after it ends"})
		return
	case !ok && req.Task == "":
		s.fail(w, r, &service.Error{Kind: service.ErrConflict, Msg: "session " + st.ID + " left nothing to follow up (its verification passed or did not run): give the follow-up's \"task\" yourself"})
		return
	}
	if req.Workspace != "" {
		s.fail(w, r, invalid("a follow-up works in its session's workspace: leave \"workspace\" out"))
		return
	}
	if req.Task == "" && len(req.Messages) == 0 && req.UserMessage == "" {
		req.Task = task
	}
	req.Workspace = st.Workspace
	if req.Model == "" {
		req.Model = st.Model
		if len(req.FallbackModels) == 0 {
			req.FallbackModels = st.FallbackModels
		}
	}
	if req.Verify == nil {
		req.Verify = st.Verify
	}
	if req.Approval == "" && st.Approval == "auto" {
		req.Approval = "auto"
	}
	labels := map[string]string{}
	for k, v := range req.Labels {
		labels[k] = v
	}
	labels[loop.FollowUpLabel] = st.ID
	req.Labels = labels
	s.start(w, r, req)
}
