// Package anthropic implements model.Model over Anthropic's Messages API.
package anthropic

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentloop/agentloop/internal/ownstack"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

const (
	// DefaultBaseURL is Anthropic's API root.
	DefaultBaseURL = "https://api.anthropic.com"
	// Version is the anthropic-version header sent.
	Version = "2023-06-01"
	// DefaultMaxTokens is sent when the request sets no MaxTokens (the API
	// requires the field).
	DefaultMaxTokens = 4096
)

// Config configures a Client. Model and APIKey are required by the API.
type Config struct {
	// BaseURL is the API root; "/v1/messages" is appended. Default
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey string
	// Model is used when the Request names none, e.g. "claude-sonnet-4-5".
	Model string
	// MaxTokens is used when the Request sets none (default 4096).
	MaxTokens int
	// ThinkingBudget enables extended thinking with that many tokens
	// (at least 1024, below max_tokens); zero leaves it off. Thinking
	// blocks come back in Response.Reasoning with their signatures and
	// must be passed back in Message.Reasoning.
	ThinkingBudget int
	// Beta lists anthropic-beta features to enable.
	Beta []string
	// Header is sent with every request.
	Header http.Header

	HTTPClient *http.Client
	Timeouts   transport.Timeouts
	Retry      transport.Retry
}

// Client is a model.Model for the Messages API.
type Client struct {
	cfg Config
	tc  *transport.Client
}

var _ model.Model = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	h := cfg.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if cfg.APIKey != "" {
		h.Set("X-Api-Key", cfg.APIKey)
	}
	h.Set("Anthropic-Version", Version)
	if len(cfg.Beta) > 0 {
		h.Set("Anthropic-Beta", strings.Join(cfg.Beta, ","))
	}
	return &Client{cfg: cfg, tc: transport.New(transport.Config{
		Provider:   "anthropic",
		URL:        transport.Endpoint(cfg.BaseURL, "/v1/messages"),
		Header:     h,
		HTTPClient: cfg.HTTPClient,
		Timeouts:   cfg.Timeouts,
		Retry:      cfg.Retry,
		KeyHint:    "check --api-key or ANTHROPIC_API_KEY",
		StatusHint: statusHint,
	})}
}

// Generate sends req. With a StreamFunc it streams and calls it for every
// text, thinking and tool-input delta.
func (c *Client) Generate(ctx context.Context, req *model.Request, stream model.StreamFunc) (*model.Response, error) {
	name, err := transport.ModelName("anthropic", req.Model, c.cfg.Model)
	if err != nil {
		return nil, err
	}
	if c.cfg.ThinkingBudget > 0 && len(req.Tools) > 0 && req.ToolChoice != "" && req.ToolChoice != model.ToolChoiceAuto && req.ToolChoice != model.ToolChoiceNone {
		return nil, fmt.Errorf("anthropic: with extended thinking the model must be free to choose (tool_choice auto or none), not made to call %q: turn thinking off for this call", req.ToolChoice)
	}
	body, err := transport.JSONBody(func() any { return c.buildRequest(name, req, stream != nil) })
	if err != nil {
		return nil, fmt.Errorf("anthropic: encoding the request: %w", err)
	}
	resp, err := c.tc.Do(ctx, name, body, stream, func(r *transport.Reply) (*model.Response, error) {
		// Decoded with encoding/json, which recurses deeply: off the
		// session's stack (see internal/ownstack).
		return ownstack.Run(func() (*model.Response, error) {
			if r.MediaType == "application/json" || (!r.Streaming() && r.MediaType != "text/event-stream") {
				return parseJSON(r)
			}
			return parseStream(r)
		})
	})
	if err != nil {
		return nil, err
	}
	return transport.Complete(req, resp, name), nil
}
