package server

import (
	"net/http"
	"time"
)

// keyRequest is POST /v1/keys.
type keyRequest struct {
	Role string `json:"role"`
	Name string `json:"name"`
}

// createKey makes an API key for the admin's own tenant; the secret is in
// the answer, once.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r.Context())
	if !c.Has(scopeAdmin) {
		problem(w, http.StatusForbidden, "creating keys needs an admin key")
		return
	}
	if s.cfg.Keys == nil {
		problem(w, http.StatusNotFound, "this server keeps no keys")
		return
	}
	var req keyRequest
	if err := s.decode(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	tenant := c.Tenant
	if tenant == "" {
		problem(w, http.StatusBadRequest, "the local caller has no tenant to make keys for: use agentloop keys create --tenant T")
		return
	}
	secret, k, err := NewKey(tenant, req.Role, req.Name, time.Now().UTC())
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.cfg.Keys.CreateKey(r.Context(), k); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"id": k.ID, "key": secret, "tenant": k.Tenant, "role": k.Role})
}
