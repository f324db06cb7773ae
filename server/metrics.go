package server

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

// counters are the server's own counts since it started.
type counters struct {
	mu       sync.Mutex
	requests map[string]uint64 // by status class: 2xx, 4xx, …
	streams  atomic.Int64      // open event streams
}

func (c *counters) request(status int) {
	c.mu.Lock()
	if c.requests == nil {
		c.requests = map[string]uint64{}
	}
	c.requests[fmt.Sprintf("%dxx", status/100)]++
	c.mu.Unlock()
}

// metrics serves Prometheus text: sessions by status, their iterations,
// tokens and cost (all tenants: for the operator of the server), the
// requests served and the event streams open.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if !callerOf(r.Context()).Has(service.ScopeAllTenants) && !callerOf(r.Context()).Has(scopeAdmin) {
		problem(w, http.StatusForbidden, "metrics are for the server's operator (an admin key, or loopback without keys)")
		return
	}
	list, err := s.svc.List(r.Context(), callerOf(r.Context()), store.Filter{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	byStatus := map[loop.Status]int{}
	iterations, tokens, cost := 0, 0, 0.0
	for _, sum := range list {
		byStatus[sum.Status]++
		iterations += sum.Iteration
		tokens += sum.Tokens
		cost += sum.CostUSD
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# HELP agentloop_sessions Sessions in the database by status.")
	fmt.Fprintln(w, "# TYPE agentloop_sessions gauge")
	for _, st := range []loop.Status{loop.StatusRunning, loop.StatusPaused, loop.StatusWaiting, loop.StatusCompleted, loop.StatusFailed, loop.StatusTerminated, loop.StatusError} {
		fmt.Fprintf(w, "agentloop_sessions{status=%q} %d\n", st, byStatus[st])
	}
	fmt.Fprintln(w, "# HELP agentloop_iterations Iterations of every session in the database.")
	fmt.Fprintln(w, "# TYPE agentloop_iterations gauge")
	fmt.Fprintf(w, "agentloop_iterations %d\n", iterations)
	fmt.Fprintln(w, "# HELP agentloop_tokens Tokens used by every session in the database.")
	fmt.Fprintln(w, "# TYPE agentloop_tokens gauge")
	fmt.Fprintf(w, "agentloop_tokens %d\n", tokens)
	fmt.Fprintln(w, "# HELP agentloop_cost_usd Cost of every session in the database, in US dollars.")
	fmt.Fprintln(w, "# TYPE agentloop_cost_usd gauge")
	fmt.Fprintf(w, "agentloop_cost_usd %g\n", cost)
	fmt.Fprintln(w, "# HELP agentloop_http_requests_total Requests served since the server started, by status class.")
	fmt.Fprintln(w, "# TYPE agentloop_http_requests_total counter")
	s.counts.mu.Lock()
	classes := make([]string, 0, len(s.counts.requests))
	for k := range s.counts.requests {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	for _, k := range classes {
		fmt.Fprintf(w, "agentloop_http_requests_total{code=%q} %d\n", k, s.counts.requests[k])
	}
	s.counts.mu.Unlock()
	o := &s.obs
	o.mu.Lock()
	for _, m := range []struct {
		name, help string
		v          any
	}{
		{"agentloop_events_total", "Events committed since the server started.", o.events},
		{"agentloop_iterations_total", "Iterations started since the server started.", o.iterations},
		{"agentloop_tool_calls_total", "Tool calls finished since the server started.", o.toolCalls},
		{"agentloop_model_calls_total", "Model replies since the server started.", o.modelCalls},
		{"agentloop_model_call_seconds_total", "Time spent in model calls since the server started.", float64(o.modelMillis) / 1000},
		{"agentloop_tokens_total", "Tokens of model calls since the server started.", o.tokens},
		{"agentloop_cost_usd_total", "Cost of model calls since the server started, in US dollars.", o.costUSD},
		{"agentloop_event_commit_lag_seconds_total", "Summed time from an event being recorded to its commit notice (divide by agentloop_events_total).", o.lagSum.Seconds()},
		{"agentloop_event_commit_lag_seconds_max", "Longest time from an event being recorded to its commit notice.", o.lagMax.Seconds()},
	} {
		kind := "counter"
		if strings.HasSuffix(m.name, "_max") {
			kind = "gauge"
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %v\n", m.name, m.help, m.name, kind, m.name, m.v)
	}
	o.mu.Unlock()
	fmt.Fprintln(w, "# HELP agentloop_event_streams Event streams (SSE and WebSocket) open now.")
	fmt.Fprintln(w, "# TYPE agentloop_event_streams gauge")
	fmt.Fprintf(w, "agentloop_event_streams %d\n", s.counts.streams.Load())
}
