// Package openai implements model.Model over the OpenAI Chat Completions
// API, which OpenRouter, vLLM, llama.cpp's server, LM Studio, Ollama's /v1,
// DeepSeek and Gemini's compatible endpoint also speak.
package openai

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentloop/agentloop/internal/ownstack"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Client. Only Model is required.
type Config struct {
	// Provider names the service in errors ("openai", "openrouter", "vllm",
	// …); default "openai".
	Provider string
	// BaseURL is the API root; "/chat/completions" is appended. Default
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer"; empty sends none.
	APIKey string
	// KeyEnv names the environment variable that holds the key, for the hint
	// on 401 and 403 replies (e.g. "OPENAI_API_KEY").
	KeyEnv string
	// Model is used when the Request names none.
	Model string
	// MaxTokensField is the request field that carries Request.MaxTokens:
	// "max_completion_tokens" (what OpenAI's current models accept) or
	// "max_tokens" (what most compatible servers accept). Default
	// "max_tokens".
	MaxTokensField string
	// Header is sent with every request (e.g. OpenRouter's HTTP-Referer).
	Header http.Header
	// ReasoningEffort, when set ("low", "medium", "high"), is sent as
	// reasoning_effort: how much a reasoning model thinks (OpenAI's o- and
	// gpt-5 models, Gemini's and other compatible servers' equivalents).
	ReasoningEffort string

	HTTPClient *http.Client
	Timeouts   transport.Timeouts
	Retry      transport.Retry
	// NewID names tool calls a server sends without an ID (some local
	// servers do). Default: "call_" and random hex.
	NewID func() string
}

// Client is a model.Model for one Chat Completions endpoint.
type Client struct {
	cfg Config
	tc  *transport.Client
}

var _ model.Model = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.MaxTokensField == "" {
		cfg.MaxTokensField = "max_tokens"
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
	keyHint := "check --api-key"
	if cfg.KeyEnv != "" {
		keyHint += " or " + cfg.KeyEnv
	}
	return &Client{cfg: cfg, tc: transport.New(transport.Config{
		Provider:        cfg.Provider,
		URL:             transport.Endpoint(cfg.BaseURL, "/chat/completions"),
		Header:          h,
		HTTPClient:      cfg.HTTPClient,
		Timeouts:        cfg.Timeouts,
		Retry:           cfg.Retry,
		KeyHint:         keyHint,
		StatusHint:      statusHint(cfg.MaxTokensField),
		UnreachableHint: unreachableHint(cfg.BaseURL),
	})}
}

// Generate sends req and returns the complete reply. With a StreamFunc it
// streams (SSE) and calls it for every text, reasoning and tool-argument
// delta.
func (c *Client) Generate(ctx context.Context, req *model.Request, stream model.StreamFunc) (*model.Response, error) {
	name, err := transport.ModelName(c.cfg.Provider, req.Model, c.cfg.Model)
	if err != nil {
		return nil, err
	}
	body, err := transport.EncodedBody(func(buf []byte) ([]byte, error) {
		return c.appendRequest(slices.Grow(buf, requestSize(req)), name, req, stream != nil)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", c.cfg.Provider, err)
	}
	resp, err := c.tc.Do(ctx, name, body, stream, func(r *transport.Reply) (*model.Response, error) {
		if r.MediaType == "application/json" || (!r.Streaming() && r.MediaType != "text/event-stream") {
			return c.parseJSON(r)
		}
		// Stream chunks are decoded with encoding/json, which recurses
		// deeply: off the session's stack (see internal/ownstack).
		return ownstack.Run(func() (*model.Response, error) { return c.parseStream(r) })
	})
	if err != nil {
		return nil, err
	}
	return transport.Complete(req, resp, name), nil
}
