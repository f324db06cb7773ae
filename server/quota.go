package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

// Quotas limit what one tenant may start; zero means no limit.
type Quotas struct {
	// Running is how many sessions of a tenant may be running at once.
	Running int
	// TokensPerDay and USDPerDay bound what the tenant's sessions started
	// in the last 24 hours have used.
	TokensPerDay int
	USDPerDay    float64
}

// overQuota says why the caller may not start a session now, and when to
// try again; "" when it may.
func (s *Server) overQuota(r *http.Request, c service.Caller) (string, time.Duration, error) {
	q := s.cfg.Quotas
	if q == (Quotas{}) {
		return "", 0, nil
	}
	tenantOnly := service.Caller{Tenant: c.Tenant, Subject: c.Subject, Scopes: []service.Scope{service.ScopeRead}}
	if q.Running > 0 {
		running, err := s.svc.List(r.Context(), tenantOnly, store.Filter{Status: []loop.Status{loop.StatusRunning}})
		if err != nil {
			return "", 0, err
		}
		if len(running) >= q.Running {
			return fmt.Sprintf("tenant %q already runs %d sessions, its limit; wait for one to finish, or pause or terminate one", c.Tenant, len(running)), 30 * time.Second, nil
		}
	}
	if q.TokensPerDay > 0 || q.USDPerDay > 0 {
		list, err := s.svc.List(r.Context(), tenantOnly, store.Filter{})
		if err != nil {
			return "", 0, err
		}
		since := time.Now().Add(-24 * time.Hour)
		tokens, usd := 0, 0.0
		oldest := time.Now()
		for _, sum := range list {
			if sum.CreatedAt.Before(since) {
				continue
			}
			tokens += sum.Tokens
			usd += sum.CostUSD
			if sum.CreatedAt.Before(oldest) {
				oldest = sum.CreatedAt
			}
		}
		wait := max(time.Until(oldest.Add(24*time.Hour)), time.Minute)
		if q.TokensPerDay > 0 && tokens >= q.TokensPerDay {
			return fmt.Sprintf("tenant %q used %d tokens in the last 24 hours, its limit is %d", c.Tenant, tokens, q.TokensPerDay), wait, nil
		}
		if q.USDPerDay > 0 && usd >= q.USDPerDay {
			return fmt.Sprintf("tenant %q spent $%.2f in the last 24 hours, its limit is $%.2f", c.Tenant, usd, q.USDPerDay), wait, nil
		}
	}
	return "", 0, nil
}

// roomToRun holds the tenant's quota lock for a control that may set a
// stopped session running again (resume, reply, a decision), and refuses
// it (429) when the tenant already runs its limit. Pause and terminate
// pass through it too: they only ever free room.
func (s *Server) roomToRun(w http.ResponseWriter, r *http.Request, id string) (unlock func(), ok bool) {
	q := s.cfg.Quotas.Running
	kind := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	if q <= 0 || kind == "pause" || kind == "terminate" {
		return func() {}, true
	}
	c := callerOf(r.Context())
	st, err := s.svc.Get(r.Context(), c, id)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	if st.Status == loop.StatusRunning || st.Status.Finished() {
		return func() {}, true // nothing to start: the control itself says what it did
	}
	unlock, err = s.svc.LockTenant(r.Context(), c.Tenant)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	tenantOnly := service.Caller{Tenant: c.Tenant, Subject: c.Subject, Scopes: []service.Scope{service.ScopeRead}}
	running, err := s.svc.List(r.Context(), tenantOnly, store.Filter{Status: []loop.Status{loop.StatusRunning}})
	if err != nil {
		unlock()
		s.fail(w, r, err)
		return nil, false
	}
	if len(running) >= q {
		unlock()
		tooMany(w, fmt.Sprintf("tenant %q already runs %d sessions, its limit; this session would be one more: wait for one to finish, or pause or terminate one", c.Tenant, len(running)), 30*time.Second)
		return nil, false
	}
	return unlock, true
}

func tooMany(w http.ResponseWriter, why string, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())))
	problem(w, http.StatusTooManyRequests, why)
}
