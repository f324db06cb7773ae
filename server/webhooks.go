package server

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentloop/agentloop/notify"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

// Webhooks of a tenant (notify.go has what they receive):
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

// webhookAPI serves the routes above for a server that sends notifications.
type webhookAPI struct {
	*Server
	n *notify.Notifier
}

// SendNotifications serves /v1/webhooks with n's webhooks and lets start
// requests name a notify URL when n can sign for them. Call it before
// serving.
func (s *Server) SendNotifications(n *notify.Notifier) {
	a := webhookAPI{s, n}
	s.mux.HandleFunc("POST /v1/webhooks", s.auth(a.createWebhook))
	s.mux.HandleFunc("GET /v1/webhooks", s.auth(a.listWebhooks))
	s.mux.HandleFunc("DELETE /v1/webhooks/{id}", s.auth(a.deleteWebhook))
	s.mux.HandleFunc("GET /v1/webhooks/deliveries", s.auth(a.listDeliveries))
	notifyURLs.Store(s, n)
}

// notifyURLs holds the notifier of each server that sends notifications,
// for the start requests' notify URLs.
var notifyURLs sync.Map // *Server → *notify.Notifier

// notifyDefaults are the start defaults for a request's notify URL.
func (s *Server) notifyDefaults() (urls, private bool) {
	v, ok := notifyURLs.Load(s)
	if !ok {
		return false, false
	}
	n := v.(*notify.Notifier)
	return n.SignsSessions(), n.AllowPrivate()
}

// webhookAdmin checks that the caller may manage the tenant's
// notifications (admin and operator keys); all says it sees every tenant.
func (a webhookAPI) webhookAdmin(w http.ResponseWriter, r *http.Request) (tenant string, all, ok bool) {
	c := callerOf(r.Context())
	if !c.Has(service.ScopeControl) {
		problem(w, http.StatusForbidden, "webhooks need an admin or operator key")
		return "", false, false
	}
	return c.Tenant, c.Has(service.ScopeAllTenants), true
}

func (a webhookAPI) createWebhook(w http.ResponseWriter, r *http.Request) {
	tenant, _, ok := a.webhookAdmin(w, r)
	if !ok {
		return
	}
	var req webhookRequest
	if err := a.decode(w, r, &req, false); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := notify.CheckURL(req.URL, a.n.AllowPrivate()); err != nil {
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
	h, err := a.n.Store().PutWebhook(r.Context(), store.Webhook{ID: "wh_" + randomHex(8), Tenant: tenant, URL: req.URL, Secret: req.Secret})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, webhookView{ID: h.ID, Tenant: h.Tenant, URL: h.URL, CreatedAt: h.CreatedAt, Secret: h.Secret})
}

func (a webhookAPI) listWebhooks(w http.ResponseWriter, r *http.Request) {
	tenant, all, ok := a.webhookAdmin(w, r)
	if !ok {
		return
	}
	hooks, err := a.n.Store().ListWebhooks(r.Context(), tenant, all)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]webhookView, 0, len(hooks))
	for _, h := range hooks {
		out = append(out, webhookView{ID: h.ID, Tenant: h.Tenant, URL: h.URL, CreatedAt: h.CreatedAt})
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": out})
}

func (a webhookAPI) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	tenant, _, ok := a.webhookAdmin(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if tenant == "" && id == notify.ServerWebhookID {
		problem(w, http.StatusBadRequest, "the server's webhook is set by agentloop serve --webhook; restart without it to remove it")
		return
	}
	if err := a.n.Store().DeleteWebhook(r.Context(), tenant, id); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a webhookAPI) listDeliveries(w http.ResponseWriter, r *http.Request) {
	tenant, all, ok := a.webhookAdmin(w, r)
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
	ds, err := a.n.Store().ListDeliveries(r.Context(), tenant, all, limit)
	if err != nil {
		a.fail(w, r, err)
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
