// Package ollama implements model.Model over Ollama's native /api/chat.
package ollama

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/agentloop/agentloop/internal/ownstack"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

// DefaultBaseURL is where a local Ollama listens.
const DefaultBaseURL = "http://localhost:11434"

// Config configures a Client. Only Model is required.
type Config struct {
	// BaseURL is the server root; "/api/chat" is appended. Default
	// DefaultBaseURL.
	BaseURL string
	// APIKey, when set, is sent as "Authorization: Bearer" (for a proxy or
	// a hosted Ollama).
	APIKey string
	// Model is used when the Request names none, e.g. "qwen3:8b".
	Model string
	// NumCtx sets options.num_ctx, the context window; zero keeps the
	// model's default, which is often too small for long agent sessions.
	NumCtx int
	// StreamTools streams replies to requests that offer tools. Off by
	// default: such requests are sent with "stream": false, because
	// Ollama's streamed tool calls are unreliable with several model
	// templates (calls arrive as text or are cut); the whole reply is then
	// passed to the StreamFunc as one delta.
	StreamTools bool
	// Think sets "think" for reasoning models; nil leaves the model default.
	Think *bool
	// KeepAlive sets "keep_alive" (e.g. "30m"); empty leaves the default.
	KeepAlive string
	// Header is sent with every request.
	Header http.Header

	HTTPClient *http.Client
	Timeouts   transport.Timeouts
	Retry      transport.Retry
	// NoRecover turns off reading tool calls that Ollama's parser left in
	// a reply's text. By default, when tools were offered and the reply
	// has text but no calls, the client asks /api/show (once per model)
	// for the model's template, takes its call prefix the way Ollama does
	// (see CallPrefix) and recovers the calls with toolcall.Parse under
	// that prefix's rule.
	NoRecover bool
	// NewID names tool calls (Ollama may send none). Default: "call_" and
	// random hex.
	NewID func() string
}

// Client is a model.Model for one Ollama server.
type Client struct {
	cfg      Config
	tc       *transport.Client
	header   http.Header
	prefixes sync.Map // model name -> its template's call prefix
}

var _ model.Model = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.NewID == nil {
		cfg.NewID = func() string { return transport.NewID("call_") }
	}
	h := cfg.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return &Client{cfg: cfg, header: h, tc: transport.New(transport.Config{
		Provider:        "ollama",
		URL:             transport.Endpoint(cfg.BaseURL, "/api/chat"),
		Header:          h,
		HTTPClient:      cfg.HTTPClient,
		Timeouts:        cfg.Timeouts,
		Retry:           cfg.Retry,
		KeyHint:         "check --api-key or the proxy in front of Ollama",
		StatusHint:      statusHint,
		UnreachableHint: unreachableHint,
	})}
}

// Generate sends req. Without a StreamFunc, or with tools offered and
// StreamTools off, it asks for one JSON reply ("stream": false); otherwise
// it reads Ollama's NDJSON stream and calls stream for every text,
// thinking and tool-call delta.
func (c *Client) Generate(ctx context.Context, req *model.Request, stream model.StreamFunc) (*model.Response, error) {
	name, err := transport.ModelName("ollama", req.Model, c.cfg.Model)
	if err != nil {
		return nil, err
	}
	whole := stream // told of the whole reply when it is not streamed
	if len(req.Tools) > 0 && !c.cfg.StreamTools {
		stream = nil
	}
	body, err := transport.JSONBody(func() any { return c.buildRequest(name, req, stream != nil) })
	if err != nil {
		return nil, fmt.Errorf("ollama: encoding the request: %w", err)
	}
	resp, err := c.tc.Do(ctx, name, body, stream, func(r *transport.Reply) (*model.Response, error) {
		// Decoded with encoding/json, which recurses deeply: off the
		// session's stack (see internal/ownstack).
		return ownstack.Run(func() (*model.Response, error) {
			if r.Streaming() {
				return c.parseStream(r)
			}
			return c.parseJSON(r)
		})
	})
	if err != nil {
		return nil, err
	}
	if !c.cfg.NoRecover {
		c.recoverCalls(ctx, name, req, resp)
	}
	if stream == nil && whole != nil && (resp.Text != "" || resp.Reasoning != nil) {
		d := model.Delta{Text: resp.Text}
		for _, r := range resp.Reasoning {
			d.Reasoning += r.Text
		}
		whole(d)
	}
	return transport.Complete(req, resp, name), nil
}
