package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/mcpserver"
	"github.com/agentloop/agentloop/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// /mcp: the sessions as an MCP server (streamable HTTP, stateless: each
// POST is one exchange), behind the same front door, keys and rate limits
// as /v1. Every tool call is made for the caller its own request's key
// names, so a revoked key stops working at its next call. Starts and
// controls go through the /v1 handlers themselves (an in-process request
// with that caller), so their defaults, quotas and refusals — no approval
// "auto" without --yes or an admin key, no script: models without
// --allow-script-models, workspaces inside the tenant's — are the same
// code, not a copy.

// mcpHandler is the MCP endpoint's handler, built once.
func (s *Server) mcpHandler() http.Handler {
	srv := mcpserver.New(mcpserver.Config{Service: s.svc, Caller: s.mcpCaller, Start: s.mcpStart, Control: s.mcpControl})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, MaxRequestBodyBytes: s.cfg.MaxBody,
		// The front door already answers only loopback names (or the
		// public URL's host, with keys): the SDK's own check would refuse
		// that public host.
		DisableLocalhostProtection: true,
	})
}

// mcpCaller authenticates a tool call from the headers of the HTTP request
// that carried it.
func (s *Server) mcpCaller(ctx context.Context, extra *mcp.RequestExtra) (service.Caller, error) {
	if extra == nil {
		return service.Caller{}, errors.New("this MCP request came without its HTTP headers; send it to /mcp over HTTP")
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/mcp", nil)
	if err != nil {
		return service.Caller{}, err
	}
	r.Header = extra.Header
	c, _, status, msg := s.callerFor(r)
	if status != 0 {
		return service.Caller{}, errors.New(msg)
	}
	return c, nil
}

func (s *Server) mcpStart(ctx context.Context, c service.Caller, extra *mcp.RequestExtra, req api.StartRequest) (string, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	var created api.Created
	if err := s.inProcess(ctx, c, extra, "/v1/sessions", nil, body, s.createSession, &created); err != nil {
		return "", err
	}
	return created.ID, nil
}

func (s *Server) mcpControl(ctx context.Context, c service.Caller, extra *mcp.RequestExtra, ctl mcpserver.Control) (api.ControlResult, error) {
	var res api.ControlResult
	path := map[string]string{"id": ctl.SessionID}
	var h http.HandlerFunc
	var body any = api.Control{Text: ctl.Text}
	switch ctl.Kind {
	case "pause":
		h, body = s.pause, api.Control{Reason: ctl.Text}
	case "resume":
		h, body = s.resume, api.Control{Note: ctl.Text}
	case "terminate":
		h, body = s.terminate, api.Control{Reason: ctl.Text}
	case "reply":
		h = s.reply
	case "decide":
		h, body, path["call"] = s.decide, ctl.Decision, ctl.CallID
	default:
		return res, fmt.Errorf("unknown control %q", ctl.Kind)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return res, err
	}
	err = s.inProcess(ctx, c, extra, "/v1/sessions/"+ctl.SessionID+"/"+ctl.Kind, path, b, h, &res)
	return res, err
}

// inProcess runs a /v1 handler for the caller, as if it had been sent
// body, and reads its answer into out; a problem answer is an error with
// the problem's text.
func (s *Server) inProcess(ctx context.Context, c service.Caller, extra *mcp.RequestExtra, path string, values map[string]string, body []byte, h http.HandlerFunc, out any) error {
	r, err := http.NewRequestWithContext(context.WithValue(ctx, callerKey{}, c), http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	if extra != nil {
		// The handler's own checks read it (an admin key may ask for
		// approval "auto").
		r.Header.Set("Authorization", extra.Header.Get("Authorization"))
	}
	for k, v := range values {
		r.SetPathValue(k, v)
	}
	rec := &recorder{header: http.Header{}}
	h(rec, r)
	if rec.status/100 != 2 {
		var p api.Problem
		if json.Unmarshal(rec.body.Bytes(), &p) == nil && p.Detail != "" {
			return errors.New(p.Detail)
		}
		return fmt.Errorf("%s: %s", http.StatusText(rec.status), rec.body.String())
	}
	return json.Unmarshal(rec.body.Bytes(), out)
}

// recorder keeps what an in-process handler answered.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
