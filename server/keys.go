package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

// keyRequest is POST /v1/keys.
type keyRequest struct {
	Role string `json:"role"`
	Name string `json:"name"`
	// Tenant is for a caller that administers every tenant (the local
	// caller); anyone else makes keys for their own tenant only.
	Tenant string `json:"tenant,omitempty"`
}

// keyView is a key as listed: never the secret or its hash.
type keyView struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Role      string    `json:"role"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// keyAdmin checks that the caller may manage keys and that the server keeps
// them; the tenant it manages is its own ("" for every tenant).
func (s *Server) keyAdmin(w http.ResponseWriter, r *http.Request) (tenant string, ok bool) {
	c := callerOf(r.Context())
	if !c.Has(scopeAdmin) {
		problem(w, http.StatusForbidden, "managing keys needs an admin key")
		return "", false
	}
	if s.cfg.Keys == nil {
		problem(w, http.StatusNotFound, "this server keeps no keys")
		return "", false
	}
	if c.Has(service.ScopeAllTenants) {
		return "", true
	}
	return c.Tenant, true
}

// listKeys is GET /v1/keys: the keys of the admin's tenant (every
// tenant's for the local caller), oldest first.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.keyAdmin(w, r)
	if !ok {
		return
	}
	keys, err := s.cfg.Keys.ListKeys(r.Context(), tenant)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]keyView, 0, len(keys))
	for _, k := range keys {
		out = append(out, keyView{ID: k.ID, Tenant: k.Tenant, Role: k.Role, Name: k.Name, CreatedAt: k.CreatedAt})
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": out})
}

// deleteKey is DELETE /v1/keys/{id}: the key is revoked at once.
func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.keyAdmin(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := s.cfg.Keys.DeleteKey(r.Context(), tenant, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			problem(w, http.StatusNotFound, "no key "+id+" (GET /v1/keys lists them)")
			return
		}
		s.fail(w, r, err)
		return
	}
	s.live.revoked(id, "") // its open streams end now
	w.WriteHeader(http.StatusNoContent)
}

// createKey makes an API key for the admin's own tenant; the secret is in
// the answer, once.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	own, ok := s.keyAdmin(w, r)
	if !ok {
		return
	}
	var req keyRequest
	if err := s.decode(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	tenant := own
	switch {
	case own == "" && req.Tenant == "":
		problem(w, http.StatusBadRequest, "say which tenant the key is for: \"tenant\": \"NAME\"")
		return
	case own == "":
		tenant = req.Tenant
	case req.Tenant != "" && req.Tenant != own:
		problem(w, http.StatusForbidden, "an admin key makes keys for its own tenant only")
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
