package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// meters are the server's own instruments, beside those telemetry takes
// from committed events: requests served, streams open, and what the
// database holds (read when metrics are collected).
type meters struct {
	requests metric.Int64Counter
	streams  metric.Int64UpDownCounter
	classes  [6]metric.MeasurementOption // by status class, 1xx…5xx
}

func (s *Server) instrument() error {
	m := s.tel.Meter()
	var err error
	if s.meters.requests, err = m.Int64Counter("agentloop.http.requests", metric.WithDescription("Requests served since the server started, by status class.")); err != nil {
		return err
	}
	for i := range s.meters.classes {
		s.meters.classes[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("code", strconv.Itoa(i)+"xx")))
	}
	if s.meters.streams, err = m.Int64UpDownCounter("agentloop.event_streams", metric.WithDescription("Event streams (SSE and WebSocket) open now.")); err != nil {
		return err
	}
	s.meters.streams.Add(context.Background(), 0) // shown as 0 before the first stream
	sessions, err := m.Int64ObservableGauge("agentloop.sessions", metric.WithDescription("Sessions in the database by status."))
	if err != nil {
		return err
	}
	iterations, err := m.Int64ObservableGauge("agentloop.session.iterations", metric.WithDescription("Iterations of every session in the database."))
	if err != nil {
		return err
	}
	tokens, err := m.Int64ObservableGauge("agentloop.session.tokens", metric.WithDescription("Tokens used by every session in the database."))
	if err != nil {
		return err
	}
	cost, err := m.Float64ObservableGauge("agentloop.session.cost_usd", metric.WithDescription("Cost of every session in the database, in US dollars."))
	if err != nil {
		return err
	}
	// Every tenant's sessions: the metrics are for the server's operator.
	operator := service.Caller{Tenant: "", Subject: "metrics", Scopes: []service.Scope{service.ScopeRead, service.ScopeAllTenants}}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		list, err := s.svc.List(ctx, operator, store.Filter{})
		if err != nil {
			return err
		}
		byStatus := map[loop.Status]int64{}
		var its, toks int64
		usd := 0.0
		for _, sum := range list {
			byStatus[sum.Status]++
			its += int64(sum.Iteration)
			toks += int64(sum.Tokens)
			usd += sum.CostUSD
		}
		for _, st := range []loop.Status{loop.StatusRunning, loop.StatusPaused, loop.StatusWaiting, loop.StatusCompleted, loop.StatusFailed, loop.StatusTerminated, loop.StatusError} {
			o.ObserveInt64(sessions, byStatus[st], metric.WithAttributes(attribute.String("status", string(st))))
		}
		o.ObserveInt64(iterations, its)
		o.ObserveInt64(tokens, toks)
		o.ObserveFloat64(cost, usd)
		return nil
	}, sessions, iterations, tokens, cost)
	return err
}

func (s *Server) request(status int) {
	if c := status / 100; c >= 1 && c <= 5 {
		s.meters.requests.Add(context.Background(), 1, s.meters.classes[c])
	}
}

func (s *Server) streamOpened() func() {
	s.meters.streams.Add(context.Background(), 1)
	return func() { s.meters.streams.Add(context.Background(), -1) }
}

// metrics serves Prometheus text from the server's telemetry: what the
// database holds (all tenants), what this server committed, requests,
// streams.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if !callerOf(r.Context()).Has(service.ScopeAllTenants) && !callerOf(r.Context()).Has(scopeAdmin) {
		problem(w, http.StatusForbidden, "metrics are for the server's operator (an admin key, or loopback without keys)")
		return
	}
	h := s.tel.Handler()
	if h == nil {
		problem(w, http.StatusNotFound, "this server does not serve Prometheus metrics")
		return
	}
	h.ServeHTTP(w, r)
}

// Observe measures (and, with tracing on, traces) what st commits; it
// returns the function that stops it.
func (s *Server) Observe(st store.Store) (stop func()) { return s.tel.Observe(st) }
