package server

import (
	"net/http"
)

// compare sets two sessions side by side (service.Compare): GET
// /v1/sessions/compare?a=ID&b=ID. The route is more specific than
// /v1/sessions/{id}, so the mux sends it here whatever the order.
func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a, b := q.Get("a"), q.Get("b")
	if a == "" || b == "" {
		problem(w, http.StatusBadRequest, "give the two sessions to compare: /v1/sessions/compare?a=ID&b=ID")
		return
	}
	if !isSessionID(w, "a", a) || !isSessionID(w, "b", b) {
		return
	}
	out, err := s.svc.Compare(r.Context(), callerOf(r.Context()), a, b)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
