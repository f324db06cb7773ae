package server

import (
	"fmt"
	"net/http"
	"strconv"
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
	tenantOnly := tenantReader(c)
	if q.Running > 0 {
		running, err := s.runningOf(r, c)
		if err != nil {
			return "", 0, err
		}
		if running >= q.Running {
			return fmt.Sprintf("%s already runs %d sessions, its limit; wait for one to finish, or pause or terminate one", tenantName(c), running), 30 * time.Second, nil
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
			return fmt.Sprintf("%s used %d tokens in the last 24 hours, its limit is %d", tenantName(c), tokens, q.TokensPerDay), wait, nil
		}
		if q.USDPerDay > 0 && usd >= q.USDPerDay {
			return fmt.Sprintf("%s spent $%.2f in the last 24 hours, its limit is $%.2f", tenantName(c), usd, q.USDPerDay), wait, nil
		}
	}
	return "", 0, nil
}

// tenantName names the caller's tenant in a message.
func tenantName(c service.Caller) string {
	if c.Tenant == "" {
		return "this server's local tenant"
	}
	return fmt.Sprintf("tenant %q", c.Tenant)
}

// tenantReader reads the caller's own tenant only, whatever else it may.
func tenantReader(c service.Caller) service.Caller {
	return service.Caller{Tenant: c.Tenant, Subject: c.Subject, Scopes: []service.Scope{service.ScopeRead}}
}

// runningOf counts the caller's tenant's running sessions.
func (s *Server) runningOf(r *http.Request, c service.Caller) (int, error) {
	running, err := s.svc.List(r.Context(), tenantReader(c), store.Filter{Status: []loop.Status{loop.StatusRunning}})
	return len(running), err
}

// roomToRun holds the tenant's quota lock for a control that may set a
// stopped session running again (resume, reply, a decision), and refuses
// it (429) when the tenant already runs its limit.
func (s *Server) roomToRun(w http.ResponseWriter, r *http.Request, id string) (unlock func(), ok bool) {
	return s.roomToRunIf(w, r, id, func(st *loop.State) bool {
		return st.Status != loop.StatusRunning && !st.Status.Finished()
	})
}

// roomToRunIf is roomToRun for a request that sets the session running
// when starts says so of its state.
func (s *Server) roomToRunIf(w http.ResponseWriter, r *http.Request, id string, starts func(*loop.State) bool) (unlock func(), ok bool) {
	q := s.cfg.Quotas.Running
	if q <= 0 {
		return func() {}, true
	}
	c := callerOf(r.Context())
	st, err := s.svc.Get(r.Context(), c, id)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	if !starts(st) {
		return func() {}, true // nothing to start: the control itself says what it did
	}
	unlock, err = s.svc.LockTenant(r.Context(), c.Tenant)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	running, err := s.runningOf(r, c)
	if err != nil {
		unlock()
		s.fail(w, r, err)
		return nil, false
	}
	if running >= q {
		unlock()
		tooMany(w, fmt.Sprintf("%s already runs %d sessions, its limit; this session would be one more: wait for one to finish, or pause or terminate one", tenantName(c), running), 30*time.Second)
		return nil, false
	}
	return unlock, true
}

// roomToStart holds the tenant's quota lock for a new session, so the
// count of running sessions and this start are one step for every server
// sharing the store, and refuses it (429) when a quota is used up.
func (s *Server) roomToStart(w http.ResponseWriter, r *http.Request, c service.Caller) (unlock func(), ok bool) {
	unlock = func() {}
	if s.cfg.Quotas.Running > 0 {
		var err error
		if unlock, err = s.svc.LockTenant(r.Context(), c.Tenant); err != nil {
			s.fail(w, r, err)
			return nil, false
		}
	}
	if why, wait, err := s.overQuota(r, c); err != nil || why != "" {
		unlock()
		if err != nil {
			s.fail(w, r, err)
		} else {
			tooMany(w, why, wait)
		}
		return nil, false
	}
	return unlock, true
}

func tooMany(w http.ResponseWriter, why string, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())))
	problem(w, http.StatusTooManyRequests, why)
}
