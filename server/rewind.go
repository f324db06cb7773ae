package server

import (
	"net/http"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
)

// rewind takes a stopped session back to the end of a step, files
// included, or with dry_run says which files that changes.
func (s *Server) rewind(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	var req api.RewindRequest
	if err := s.decode(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.At < 1 {
		s.fail(w, r, invalid("\"at\" is the step to rewind to, from 1"))
		return
	}
	if !req.DryRun {
		// A paused session, or one given a message, runs again: it
		// counts against the running quota.
		unlock, ok := s.roomToRunIf(w, r, id, func(st *loop.State) bool {
			return st.Status == loop.StatusPaused || (st.Status.Finished() && req.Message != "")
		})
		if !ok {
			return
		}
		defer unlock()
	}
	res, err := s.svc.Rewind(r.Context(), callerOf(r.Context()), id, service.RewindRequest{At: req.At, Message: req.Message, DryRun: req.DryRun})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.Rewound{SessionID: res.ID, At: res.At, Files: make([]api.FileChange, len(res.Files)), RewoundSteps: res.Steps, Resumed: res.Resumed}
	for i, f := range res.Files {
		out.Files[i] = api.FileChange{Path: f.Path, Change: f.Change}
	}
	writeJSON(w, http.StatusOK, out)
}
