package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/agentloop/agentloop/notify"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

// Webhooks of a tenant (package notify has what they receive), served
// when Config.Notifier is set:
//
//	POST   /v1/webhooks             add one: {"url", "secret"?}; the answer holds the secret, once
//	GET    /v1/webhooks             the tenant's webhooks (never their secrets)
//	DELETE /v1/webhooks/{id}        remove one
//	GET    /v1/webhooks/deliveries  the tenant's latest deliveries: status, attempts, last error

type webhookRequest struct {
	URL string `json:"url"`
	// Secret signs the deliveries; a new random one when left out.
	Secret string `json:"secret,omitempty"`
}

type webhookView struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant,omitempty"`
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"created_at"`
	Secret    string    `json:"secret,omitempty"`
}

// notifyDefaults are the start defaults for a request's notify URL:
// allowed when the server's notifier can sign for it.
func (s *Server) notifyDefaults() (urls, private bool) {
	n := s.cfg.Notifier
	if n == nil {
		return false, false
	}
	return n.SignsSessions(), n.AllowPrivate()
}

// webhookAdmin checks that the caller may manage the tenant's
// notifications (admin and operator keys); all says it sees every tenant.
// A server without a notifier (a store that keeps no webhooks) answers
// 404 saying so.
func (s *Server) webhookAdmin(w http.ResponseWriter, r *http.Request) (n *notify.Notifier, tenant string, all, ok bool) {
	if s.cfg.Notifier == nil {
		problem(w, http.StatusNotFound, "this server sends no notifications: its store keeps no webhooks (use SQLite or PostgreSQL)")
		return nil, "", false, false
	}
	c := callerOf(r.Context())
	if !c.Has(service.ScopeControl) {
		problem(w, http.StatusForbidden, "webhooks need an admin or operator key")
		return nil, "", false, false
	}
	return s.cfg.Notifier, c.Tenant, c.Has(service.ScopeAllTenants), true
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	n, tenant, _, ok := s.webhookAdmin(w, r)
	if !ok {
		return
	}
	var req webhookRequest
	if err := s.decode(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := notify.CheckURL(req.URL, n.AllowPrivate()); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(req.URL) > 2048 || len(req.Secret) > 256 {
		problem(w, http.StatusBadRequest, "url: at most 2048 characters; secret: at most 256")
		return
	}
	if req.Secret == "" {
		req.Secret = randomHex(24)
	}
	h, err := n.Store().PutWebhook(r.Context(), store.Webhook{ID: "wh_" + randomHex(8), Tenant: tenant, URL: req.URL, Secret: req.Secret})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, webhookView{ID: h.ID, Tenant: h.Tenant, URL: h.URL, CreatedAt: h.CreatedAt, Secret: h.Secret})
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	n, tenant, all, ok := s.webhookAdmin(w, r)
	if !ok {
		return
	}
	hooks, err := n.Store().ListWebhooks(r.Context(), tenant, all)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]webhookView, 0, len(hooks))
	for _, h := range hooks {
		out = append(out, webhookView{ID: h.ID, Tenant: h.Tenant, URL: h.URL, CreatedAt: h.CreatedAt})
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": out})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	n, tenant, _, ok := s.webhookAdmin(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if tenant == "" && id == notify.ServerWebhookID {
		problem(w, http.StatusBadRequest, "the server's webhook is set by agentloop serve --webhook; restart without it to remove it")
		return
	}
	if err := n.Store().DeleteWebhook(r.Context(), tenant, id); errors.Is(err, store.ErrNotFound) {
		problem(w, http.StatusNotFound, "no webhook "+id+" in this tenant (GET /v1/webhooks lists them)")
		return
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	n, tenant, all, ok := s.webhookAdmin(w, r)
	if !ok {
		return
	}
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			problem(w, http.StatusBadRequest, "limit must be a number from 1 to 500")
			return
		}
		limit = n
	}
	ds, err := n.Store().ListDeliveries(r.Context(), tenant, all, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ds == nil {
		ds = []store.Delivery{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": ds})
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
