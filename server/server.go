// Package server is agentloop's HTTP API (/v1) over package service:
// sessions as JSON, their event logs as pages or live Server-Sent Events,
// controls, and API keys per tenant. Every handler is a thin mapping: the
// service decides, and its typed errors become statuses
// (application/problem+json with a message that says what to do).
//
//	POST   /v1/sessions                      start one (task, messages, or system_prompt + user_message)
//	GET    /v1/sessions                      list (?status=&limit=&cursor=)
//	GET    /v1/sessions/{id}                 the state
//	DELETE /v1/sessions/{id}                 delete an ended one
//	DELETE /v1/sessions?ended_before=TIME    prune ended sessions last changed before TIME
//	GET    /v1/sessions/{id}/events          a page (?after=&limit=), or SSE with Accept: text/event-stream
//	POST   /v1/sessions/{id}/pause|resume|terminate|reply|messages
//	POST   /v1/sessions/{id}/approvals/{call} approve, deny or edit a pending tool call
//	GET    /v1/sessions/{id}/plan|memory|usage|verification|diff  parts of the state
//	GET    /v1/events                        the tenant's sessions as a live stream of summaries (SSE)
//	GET    /v1/prompts, GET|PUT /v1/prompts/{name}  versioned system prompts (PUT: admin)
//	POST   /v1/keys                          a new API key for the admin's tenant
//	GET    /v1/keys                          the tenant's keys (never their secrets)
//	DELETE /v1/keys/{id}                     revoke a key
//	POST|GET /v1/webhooks, DELETE /v1/webhooks/{id}, GET /v1/webhooks/deliveries  notifications (webhooks.go)
//	GET    /healthz, /readyz
//
// Sessions never depend on a connection: they run under the server's
// context, and closing every client changes nothing.
package server

import (
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/notify"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/telemetry"
)

// Config is what New needs. Service is required.
type Config struct {
	Service *service.Service
	// Keys authenticates Bearer keys. With RequireKeys false, a request
	// without a key is the local caller (every scope, the local tenant):
	// only for a server on loopback.
	Keys        store.Keys
	RequireKeys bool
	// Deltas, when set, streams token deltas to SSE readers.
	Deltas *feed.Deltas
	// Defaults fill what a create request leaves out.
	Defaults Defaults
	// Quotas limit what each tenant may start.
	Quotas Quotas
	// RateLimit bounds each API key's requests (a request without a key,
	// on a server that allows that, is not limited).
	RateLimit RateLimit
	// Workspaces, when set, gives sessions' diffs (see Workspaces).
	Workspaces *Workspaces
	// UI, when set, serves the dashboard at / and /assets/.
	UI     http.Handler
	Logger *slog.Logger
	// MaxBody bounds request bodies (default 1 MiB).
	MaxBody int64
	// Telemetry measures requests, streams and committed events, and
	// serves /metrics (default: Prometheus metrics, nothing exported).
	Telemetry *telemetry.Telemetry
	// Heartbeat is how often an idle event stream gets a comment line
	// (default 15 s), so proxies keep it open and dead clients are found.
	Heartbeat time.Duration
	// Sandbox says where sessions' commands run, for /readyz: the
	// backend and the network policy.
	Sandbox struct{ Backend, Network string }
	// Front is what the front door lets in beyond this server's own
	// origin and loopback names (see front.go).
	Front FrontDoor
	// Notifier, when set, sends notifications: it serves /v1/webhooks and
	// lets start requests name a notify URL (webhooks.go).
	Notifier *notify.Notifier
	// Demo, when set, starts the demo session: it turns on POST /v1/demo
	// (demo.go).
	Demo DemoStarter
}

// Defaults are the settings of sessions started over HTTP, unless the
// request names its own.
type Defaults struct {
	Model string
	// FallbackModels follow Model for a request that names neither
	// another model nor fallback models of its own.
	FallbackModels []string
	Endpoint       string
	Profile        string
	// Approval is "auto" (tools run without asking) or "ask" (writing and
	// executing tools wait for an approval over the API).
	Approval string
	// Workspaces is the directory session workspaces live in: a request's
	// relative workspace is taken inside it, an absolute one must be
	// inside it, and a session without one gets a new directory there.
	Workspaces string
	// AllowScripts lets requests use scripted models (script:PATH reads a
	// file of the server's): for local use and tests.
	AllowScripts  bool
	MaxIterations int
	// CommandUID and CommandGID, when set, are who sandboxed commands run
	// as (a server running as root): new workspaces are given to them.
	CommandUID, CommandGID int
	// Profiles looks up a session's profile (the config file's, then the
	// built-in ones), whose limits a session started here gets; nil: the
	// built-in profiles only.
	Profiles func(name string) (config.Profile, error)
}

// Server is the HTTP API.
type Server struct {
	cfg Config
	svc *service.Service
	log *slog.Logger
	mux *http.ServeMux
	// ready is false while the server starts (recovery) and once it stops.
	ready  func() bool
	tel    *telemetry.Telemetry
	meters meters
	limits keyLimiters
	enc    encodings
	front  *frontDoor
	live   liveKeys
}

// New returns the API handler.
func New(cfg Config) *Server {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, svc: cfg.Service, log: cfg.Logger, mux: http.NewServeMux(), ready: func() bool { return true }, tel: cfg.Telemetry, enc: newEncodings()}
	if s.tel == nil {
		s.tel = telemetry.Metrics()
	}
	if err := s.instrument(); err != nil {
		s.log.Error("metrics instruments", "err", err) // only a duplicate registration can fail
	}
	front, err := newFrontDoor(cfg.Front, cfg.RequireKeys)
	if err != nil { // serve checks its flags first; a program that did not is refused every origin it named
		s.log.Error("front door", "err", err)
		front, _ = newFrontDoor(FrontDoor{}, cfg.RequireKeys)
	}
	s.front = front
	s.live.keys = cfg.Keys
	s.routes()
	return s
}

// SetReady sets what /readyz reports.
func (s *Server) SetReady(ready func() bool) { s.ready = ready }

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /readyz", s.readyz)
	m.HandleFunc("GET /metrics", s.auth(s.metrics))
	m.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openapi)
	})
	m.HandleFunc("POST /v1/sessions", s.auth(s.createSession))
	m.HandleFunc("GET /v1/sessions", s.auth(s.listSessions))
	m.HandleFunc("GET /v1/sessions/{id}", s.auth(s.getSession))
	m.HandleFunc("DELETE /v1/sessions/{id}", s.auth(s.deleteSession))
	m.HandleFunc("DELETE /v1/sessions", s.auth(s.prune))
	m.HandleFunc("GET /v1/sessions/{id}/events", s.auth(s.events))
	m.HandleFunc("GET /v1/events", s.auth(s.summaries))
	m.HandleFunc("POST /v1/keys", s.auth(s.createKey))
	m.HandleFunc("GET /v1/keys", s.auth(s.listKeys))
	m.HandleFunc("DELETE /v1/keys/{id}", s.auth(s.deleteKey))
	m.HandleFunc("GET /v1/prompts", s.auth(s.listPrompts))
	m.HandleFunc("GET /v1/prompts/{name}", s.auth(s.getPrompt))
	m.HandleFunc("PUT /v1/prompts/{name}", s.auth(s.putPrompt))
	m.HandleFunc("GET /v1/sessions/{id}/plan", s.auth(s.plan))
	m.HandleFunc("GET /v1/sessions/{id}/memory", s.auth(s.memory))
	m.HandleFunc("GET /v1/sessions/{id}/usage", s.auth(s.usage))
	m.HandleFunc("GET /v1/sessions/{id}/diff", s.auth(s.diff))
	m.HandleFunc("GET /v1/sessions/{id}/verification", s.auth(s.verification))
	m.HandleFunc("POST /v1/sessions/{id}/pause", s.auth(s.pause))
	m.HandleFunc("POST /v1/sessions/{id}/resume", s.auth(s.resume))
	m.HandleFunc("POST /v1/sessions/{id}/terminate", s.auth(s.terminate))
	m.HandleFunc("POST /v1/sessions/{id}/reply", s.auth(s.reply))
	m.HandleFunc("POST /v1/sessions/{id}/messages", s.auth(s.reply))
	m.HandleFunc("POST /v1/sessions/{id}/approvals/{call}", s.auth(s.decide))
	m.HandleFunc("DELETE /v1/sessions/{id}/allowances/{hash}", s.auth(s.revokeAllowance))
	m.HandleFunc("POST /v1/sessions/{id}/follow-up", s.auth(s.followUp))
	m.HandleFunc("POST /v1/sessions/{id}/rewind", s.auth(s.rewind))
	m.HandleFunc("POST /v1/sessions/{id}/fork", s.auth(s.fork))
	m.HandleFunc("GET /v1/sessions/compare", s.auth(s.compare)) // wins over /v1/sessions/{id}: more specific
	// AG-UI and the AI SDK's UI message stream: projections of the log (agui.go, uistream.go).
	m.HandleFunc("POST /v1/agui", s.auth(s.aguiRun))
	m.HandleFunc("GET /v1/sessions/{id}/agui", s.auth(s.aguiFollow))
	m.HandleFunc("POST /v1/ui-stream", s.auth(s.uiChat))
	m.HandleFunc("GET /v1/ui-stream/{id}/stream", s.auth(s.uiReconnect))
	m.HandleFunc("GET /v1/sessions/{id}/ui-stream", s.auth(s.uiFollow))
	m.HandleFunc("GET /v1/demo", s.auth(s.demoInfo))
	m.HandleFunc("POST /v1/demo", s.auth(s.startDemo))
	m.HandleFunc("POST /v1/webhooks", s.auth(s.createWebhook))
	m.HandleFunc("GET /v1/webhooks", s.auth(s.listWebhooks))
	m.HandleFunc("DELETE /v1/webhooks/{id}", s.auth(s.deleteWebhook))
	m.HandleFunc("GET /v1/webhooks/deliveries", s.auth(s.listDeliveries))
	m.HandleFunc("POST /mcp", s.auth(s.mcpHandler().ServeHTTP)) // MCP over streamable HTTP (mcp.go)
	m.HandleFunc("/", s.noRoute)
	if s.cfg.UI != nil {
		m.Handle("GET /{$}", s.cfg.UI)
		m.Handle("GET /assets/", s.cfg.UI)
	}
}

// noRoute answers what no route takes: 405 with Allow when the path
// exists under other methods, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = method
		if _, pattern := s.mux.Handler(probe); pattern != "/" {
			allow = append(allow, method)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		problem(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+strings.Join(allow, " or "))
		return
	}
	problem(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path+" (the API is under /v1; see /v1/sessions)")
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	if s.front.admit(rw, r) {
		s.mux.ServeHTTP(rw, r)
	}
	s.request(rw.status)
	s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rw.status, "ms", time.Since(start).Milliseconds())
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.ready() {
		problem(w, http.StatusServiceUnavailable, "the server is starting or stopping")
		return
	}
	out := map[string]any{"status": "ready"}
	if sb := s.cfg.Sandbox; sb.Backend != "" {
		out["sandbox"] = map[string]string{"backend": sb.Backend, "network": sb.Network}
	}
	writeJSON(w, http.StatusOK, out)
}

// statusWriter remembers the status for the request log, and passes
// Flush through for event streams.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// openapi documents the API (OpenAPI 3.1).
//
//go:embed openapi.json
var openapi []byte

type callerKey struct{}

func callerOf(ctx context.Context) service.Caller { return ctx.Value(callerKey{}).(service.Caller) }
