// Package provider opens a model.Model from a "PROVIDER/NAME" spec such as
// "ollama/qwen3:8b", "openai/gpt-4.1-mini", "anthropic/claude-sonnet-4-5" or
// "openrouter/meta-llama/llama-3.3-70b-instruct", with the API key from the
// options or the provider's usual environment variable.
//
// Every provider shares one HTTP transport: retries with exponential
// backoff and full jitter that honour Retry-After, connect / first-byte /
// idle / total time limits, and errors that name the provider, the URL, the
// model and the API's own error text. The error types below are that
// transport's; test them with errors.As, and the model package's sentinels
// with errors.Is (model.ErrRetryable, model.ErrTimeout, model.ErrMalformed).
package provider

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/anthropic"
	"github.com/agentloop/agentloop/model/internal/transport"
	"github.com/agentloop/agentloop/model/ollama"
	"github.com/agentloop/agentloop/model/openai"
)

// Timeouts bound one model call. Zero fields take the defaults given
// below; a negative field disables that limit.
type Timeouts struct {
	// Connect bounds dialing and the TLS handshake (default 10s). It is only
	// enforced on the HTTP client Open builds, not on Options.HTTPClient.
	Connect time.Duration
	// FirstByte bounds the wait from sending the request to the first byte
	// of the response body: for a stream, the first event; for a
	// non-streaming call, the whole generation (default 5m, generous for
	// local models that load weights first).
	FirstByte time.Duration
	// Idle bounds the silence between two reads of the response body once
	// it has started (default 2m).
	Idle time.Duration
	// Total bounds the whole call, every attempt and backoff included
	// (default 15m).
	Total time.Duration
}

// Retry is the policy for 408, 409, 429, 5xx and network failures. Waits
// use exponential backoff with full jitter, or the server's Retry-After
// when it sends one. Zero fields take the defaults given with each field.
type Retry struct {
	// MaxAttempts counts the first try (default 4; 1 disables retries).
	MaxAttempts int
	// BaseDelay is the backoff cap of the first retry, doubled per retry
	// (default 500ms).
	BaseDelay time.Duration
	// MaxDelay caps a computed backoff (default 30s).
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the client will wait for; a
	// longer one ends the call at once with a *model.RetryableError
	// carrying the hint, so the caller can pause instead of blocking
	// (default 2m).
	MaxRetryAfter time.Duration

	// Sleep, Now and Rand replace the clock and the jitter, for tests; nil
	// means the real ones. Sleep must return early with ctx.Err() when ctx
	// ends; Rand returns a number in [0, 1).
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
	Rand  func() float64
}

// The public policies mirror the transport's field for field: these
// conversions stop compiling if the two drift apart.
func (t Timeouts) internal() transport.Timeouts { return transport.Timeouts(t) }
func (r Retry) internal() transport.Retry       { return transport.Retry(r) }

type (
	// StatusError is a non-2xx reply.
	StatusError = transport.StatusError
	// TimeoutError is a call past a limit; it wraps model.ErrTimeout.
	TimeoutError = transport.TimeoutError
	// MalformedError is a reply that could not be parsed; it wraps
	// model.ErrMalformed.
	MalformedError = transport.MalformedError
	// NetError is a failure to reach a server or to keep reading from it.
	NetError = transport.NetError
)

// DefaultSpec is opened for an empty spec.
const DefaultSpec = "ollama/qwen3:8b"

// Options configure Open. All fields are optional.
type Options struct {
	// BaseURL overrides the provider's default API root.
	BaseURL string
	// APIKey overrides the key read from the provider's environment variable.
	APIKey string
	// HTTPClient replaces the client built from Timeouts.Connect.
	HTTPClient *http.Client
	// Timeouts bound each model call; zero fields take their defaults.
	Timeouts Timeouts
	// Retry is the policy for failed calls; zero fields take their defaults.
	Retry Retry
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string

	// NumCtx is Ollama's context window (options.num_ctx); zero means
	// DefaultOllamaNumCtx. Other providers ignore it.
	NumCtx int
	// StreamTools makes Ollama stream replies to requests with tools
	// (sent with "stream": false by default). Other providers ignore it.
	StreamTools bool
	// Thinking turns reasoning on (see ParseThinking): low, medium, high,
	// or a number of tokens — Anthropic's extended thinking budget,
	// reasoning_effort on OpenAI-compatible APIs, "think" on Ollama.
	Thinking string
}

// Anthropic thinking budgets for the named levels; the API's least is 1,024.
var thinkingBudgets = map[string]int{"low": 2048, "medium": 8192, "high": 24576}

// ParseThinking checks a --thinking value: "" (off), low, medium, high,
// or a token budget of at least 1,024.
func ParseThinking(s string) (level string, tokens int, err error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || s == "off" {
		return "", 0, nil
	}
	if _, ok := thinkingBudgets[s]; ok {
		return s, 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1024 {
		return "", 0, fmt.Errorf("thinking %q: use low, medium, high, or a budget of at least 1024 tokens", s)
	}
	return "", n, nil
}

// DefaultOllamaNumCtx is the context window asked of Ollama when none is
// set. Ollama's own default (2,048–4,096 tokens by version) silently drops
// the start of an agent conversation: the system prompt with tool schemas
// is about 3,000 tokens and 15 iterations of tool calls and truncated
// outputs about 20,000 more, so 32,768 holds a default session with room
// to spare and fits every current tool-calling model (qwen3: 40,960).
const DefaultOllamaNumCtx = 32768

type kind int

const (
	chatCompletions kind = iota
	ollamaNative
	anthropicMessages
)

type info struct {
	name       string
	kind       kind
	baseURL    string
	baseEnv    string // environment variable that may override baseURL
	keyEnv     string
	keyNeeded  bool
	maxTokens  string // request field for max tokens (Chat Completions)
	extraHeads map[string]string
}

var known = []info{
	{name: "ollama", kind: ollamaNative, baseURL: ollama.DefaultBaseURL, baseEnv: "OLLAMA_HOST", keyEnv: "OLLAMA_API_KEY"},
	{name: "openai", kind: chatCompletions, baseURL: openai.DefaultBaseURL, baseEnv: "OPENAI_BASE_URL", keyEnv: "OPENAI_API_KEY", keyNeeded: true, maxTokens: "max_completion_tokens"},
	{name: "anthropic", kind: anthropicMessages, baseURL: anthropic.DefaultBaseURL, baseEnv: "ANTHROPIC_BASE_URL", keyEnv: "ANTHROPIC_API_KEY", keyNeeded: true},
	{name: "openrouter", kind: chatCompletions, baseURL: "https://openrouter.ai/api/v1", keyEnv: "OPENROUTER_API_KEY", keyNeeded: true,
		extraHeads: map[string]string{"X-Title": "agentloop"}},
	{name: "deepseek", kind: chatCompletions, baseURL: "https://api.deepseek.com/v1", keyEnv: "DEEPSEEK_API_KEY", keyNeeded: true},
	{name: "gemini", kind: chatCompletions, baseURL: "https://generativelanguage.googleapis.com/v1beta/openai", keyEnv: "GEMINI_API_KEY", keyNeeded: true},
	{name: "vllm", kind: chatCompletions, baseURL: "http://localhost:8000/v1", keyEnv: "VLLM_API_KEY"},
	{name: "lmstudio", kind: chatCompletions, baseURL: "http://localhost:1234/v1", keyEnv: "LMSTUDIO_API_KEY"},
	{name: "llamacpp", kind: chatCompletions, baseURL: "http://localhost:8080/v1", keyEnv: "LLAMA_API_KEY"},
}

// Providers lists the known provider names.
func Providers() []string {
	names := make([]string, len(known))
	for i, p := range known {
		names[i] = p.name
	}
	return names
}

// Parse splits a spec into provider and model name. Only the first "/"
// separates them, so "openrouter/meta-llama/llama-3.3-70b-instruct" names
// the model "meta-llama/llama-3.3-70b-instruct". An empty spec is
// DefaultSpec.
func Parse(spec string) (providerName, modelName string, err error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		spec = DefaultSpec
	}
	p, name, ok := strings.Cut(spec, "/")
	if !ok || p == "" {
		return "", "", fmt.Errorf("model %q: write it as PROVIDER/NAME, e.g. %s (providers: %s)", spec, DefaultSpec, strings.Join(Providers(), ", "))
	}
	if name == "" {
		return "", "", fmt.Errorf("model %q: the model name after %q is missing, e.g. %s", spec, p+"/", example(p))
	}
	return strings.ToLower(p), name, nil
}

func example(p string) string {
	switch p {
	case "openai":
		return "openai/gpt-4.1-mini"
	case "anthropic":
		return "anthropic/claude-sonnet-4-5"
	}
	return DefaultSpec
}

// Open returns the model named by spec ("PROVIDER/NAME"; empty means
// DefaultSpec). The API key comes from opts.APIKey or the provider's
// environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY,
// OPENROUTER_API_KEY, DEEPSEEK_API_KEY, GEMINI_API_KEY; optional for local
// servers); hosted providers without one fail here rather than on the first
// call.
func Open(spec string, opts Options) (model.Model, error) {
	p, name, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	var in *info
	for i := range known {
		if known[i].name == p {
			in = &known[i]
		}
	}
	if in == nil {
		return nil, fmt.Errorf("model %q: unknown provider %q; known providers: %s", spec, p, strings.Join(Providers(), ", "))
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	key := opts.APIKey
	if key == "" && in.keyEnv != "" {
		key = strings.TrimSpace(getenv(in.keyEnv))
	}
	if key == "" && in.keyNeeded {
		return nil, fmt.Errorf("%s: no API key for model %s — set %s or pass --api-key", in.name, name, in.keyEnv)
	}
	base := opts.BaseURL
	if base == "" && in.baseEnv != "" {
		base = baseFromEnv(in, getenv(in.baseEnv))
	}
	if base == "" {
		base = in.baseURL
	}

	level, budget, err := ParseThinking(opts.Thinking)
	if err != nil {
		return nil, err
	}
	switch in.kind {
	case ollamaNative:
		var think *bool
		if level != "" || budget > 0 {
			on := true
			think = &on
		}
		numCtx := opts.NumCtx
		if numCtx <= 0 {
			numCtx = DefaultOllamaNumCtx
		}
		return ollama.New(ollama.Config{BaseURL: base, APIKey: key, Model: name, NumCtx: numCtx, StreamTools: opts.StreamTools, Think: think,
			HTTPClient: opts.HTTPClient, Timeouts: opts.Timeouts.internal(), Retry: opts.Retry.internal()}), nil
	case anthropicMessages:
		if level != "" {
			budget = thinkingBudgets[level]
		}
		return anthropic.New(anthropic.Config{BaseURL: base, APIKey: key, Model: name, ThinkingBudget: budget,
			HTTPClient: opts.HTTPClient, Timeouts: opts.Timeouts.internal(), Retry: opts.Retry.internal()}), nil
	}
	var h http.Header
	for k, v := range in.extraHeads {
		if h == nil {
			h = http.Header{}
		}
		h.Set(k, v)
	}
	if budget > 0 {
		return nil, fmt.Errorf("%s: --thinking takes low, medium or high here (reasoning_effort); a token budget is for anthropic models", in.name)
	}
	return openai.New(openai.Config{Provider: in.name, BaseURL: base, APIKey: key, KeyEnv: in.keyEnv, Model: name,
		MaxTokensField: in.maxTokens, Header: h, ReasoningEffort: level,
		HTTPClient: opts.HTTPClient, Timeouts: opts.Timeouts.internal(), Retry: opts.Retry.internal()}), nil
}

// baseFromEnv reads a base URL from the environment. OLLAMA_HOST is often
// a bare host or host:port ("0.0.0.0:11434" on the server side).
func baseFromEnv(in *info, v string) string {
	v = strings.TrimSpace(v)
	if v == "" || in.kind != ollamaNative || strings.Contains(v, "://") {
		return v
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		host, port = v, "11434"
	}
	if host == "" || host == "0.0.0.0" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
