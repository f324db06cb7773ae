package server

import (
	"context"
	"net/http"

	"github.com/agentloop/agentloop/service"
)

// DemoStarter starts the demo session as caller and returns its ID
// (Config.Demo; without one the demo routes say there is no demo). The
// demo is fixed by the program that serves it (a scripted model of its
// own in a new workspace): a request cannot name a model, a file or a
// workspace for it.
type DemoStarter func(ctx context.Context, caller service.Caller) (string, error)

// demoInfo says whether this server offers the demo, so the dashboard
// shows its button only where it works.
func (s *Server) demoInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"enabled": s.cfg.Demo != nil})
}

// startDemo starts the demo session, with the same scope and quotas as
// any other start.
func (s *Server) startDemo(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Demo == nil {
		problem(w, http.StatusNotFound, "this server has no demo: start it with agentloop serve --demo")
		return
	}
	c := callerOf(r.Context())
	if !c.Has(service.ScopeWrite) {
		problem(w, http.StatusForbidden, "starting the demo needs the sessions:write scope (an operator or admin key)")
		return
	}
	unlock, ok := s.roomToStart(w, r, c)
	if !ok {
		return
	}
	defer unlock()
	id, err := s.cfg.Demo(r.Context(), c)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeStarted(w, id)
}
