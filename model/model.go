// Package model defines the seam between the agent loop and a language model:
// the conversation types and the one-method Model interface every provider
// (OpenAI-compatible, Ollama, Anthropic, scripted) implements.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Role is who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of the conversation sent to a model.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName is the name of the tool a tool message answers (Ollama and
	// Anthropic want it; OpenAI ignores it).
	ToolName string `json:"tool_name,omitempty"`
	// IsError marks a tool result that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// Reasoning is provider-specific thinking content that must be sent back
	// verbatim on later turns (Anthropic thinking blocks with signatures).
	Reasoning []ReasoningBlock `json:"reasoning,omitempty"`
	// Images are pictures the message carries (a tool's screenshot or
	// chart, a user's upload). Content still describes them in words, so
	// a provider or model that cannot take images loses only the pixels.
	Images []Image `json:"images,omitempty"`
}

// Image is a picture in a message: its media type and its bytes (base64
// in JSON). Providers send it in their own format: OpenAI as an image_url
// data URL in a user message, Anthropic as a base64 image block, Ollama in
// the message's images list.
type Image struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

// ReasoningBlock is a thinking block a provider wants returned unchanged.
type ReasoningBlock struct {
	Type      string `json:"type"` // "thinking" or "redacted_thinking"
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// ToolCall is a request from the model to run a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Extra is provider data the call must be sent back with on later
	// turns, kept verbatim (Gemini's thought signature, in the
	// OpenAI-compatible API's extra_content).
	Extra json.RawMessage `json:"extra,omitempty"`
}

// ToolSpec describes a tool offered to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
}

// Request is one call to a model.
type Request struct {
	// Model is the provider's own model name ("gpt-4.1-mini", not
	// "openai/gpt-4.1-mini"); empty means the name the client was opened
	// with, which is what the runner always sends.
	Model       string     `json:"model,omitempty"`
	Messages    []Message  `json:"messages"`
	Tools       []ToolSpec `json:"tools,omitempty"`
	MaxTokens   int        `json:"max_tokens,omitempty"`
	Temperature *float64   `json:"temperature,omitempty"`
	// ToolChoice says whether the model must call a tool: "" or
	// ToolChoiceAuto (it decides), ToolChoiceRequired (some tool),
	// ToolChoiceNone (no tool), or the name of the one tool to call.
	ToolChoice string `json:"tool_choice,omitempty"`
}

// Tool choices (Request.ToolChoice); any other value names a tool.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
	ToolChoiceNone     = "none"
)

// Usage counts tokens of one call (or a sum of calls).
type Usage struct {
	InputTokens int `json:"input_tokens"`
	// OutputTokens are every token the model produced and bills as
	// output, hidden reasoning included.
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens are the part of OutputTokens the model spent
	// thinking (reported by the provider, never shown).
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Finish reasons, normalised across providers.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
	FinishFiltered  = "content_filter"
)

// Response is a model's complete reply.
type Response struct {
	Text         string           `json:"text,omitempty"`
	ToolCalls    []ToolCall       `json:"tool_calls,omitempty"`
	Reasoning    []ReasoningBlock `json:"reasoning,omitempty"`
	FinishReason string           `json:"finish_reason,omitempty"`
	Usage        Usage            `json:"usage"`
	// UsageEstimated is true when the provider returned no usage and the
	// counts were computed locally.
	UsageEstimated bool `json:"usage_estimated,omitempty"`
	// Model is the model name the provider reports having used.
	Model string `json:"model,omitempty"`
	// TextRead says the provider already read Text for tool calls under
	// the model's own rules (Ollama: its template's call prefix) and
	// found none: the runner must not read it again with looser ones.
	TextRead bool `json:"text_read,omitempty"`
}

// Delta is one streamed piece of a reply, for live display. The complete
// reply is still returned by Generate; deltas are informational.
type Delta struct {
	Text string `json:"text,omitempty"`
	// ToolCallIndex, ToolName and ArgumentsFragment describe a piece of a
	// tool call being streamed.
	ToolCallIndex     int    `json:"tool_call_index,omitempty"`
	ToolName          string `json:"tool_name,omitempty"`
	ArgumentsFragment string `json:"arguments_fragment,omitempty"`
	Reasoning         string `json:"reasoning,omitempty"`
}

// StreamFunc receives deltas as they arrive. It must not block for long.
type StreamFunc func(Delta)

// Model sends a conversation to a language model and returns its reply.
// When stream is non-nil the provider streams and calls it for every delta;
// when nil it may use a non-streaming request.
type Model interface {
	Generate(ctx context.Context, req *Request, stream StreamFunc) (*Response, error)
}

// Func adapts a function to the Model interface.
type Func func(ctx context.Context, req *Request, stream StreamFunc) (*Response, error)

// Generate calls f.
func (f Func) Generate(ctx context.Context, req *Request, stream StreamFunc) (*Response, error) {
	return f(ctx, req, stream)
}

// Sentinel errors providers wrap so the loop can decide what to do with
// errors.Is.
var (
	// ErrRetryable marks a failure worth retrying (429, 5xx, network).
	ErrRetryable = errors.New("retryable model error")
	// ErrTimeout marks a call that exceeded a time limit (first token, idle, total).
	ErrTimeout = errors.New("model call timed out")
	// ErrMalformed marks a reply that could not be parsed.
	ErrMalformed = errors.New("malformed model response")
	// ErrModelUnavailable marks a model that cannot serve the call however
	// often it is retried: gone (404) or refusing the conversation as too
	// long for its context.
	ErrModelUnavailable = errors.New("model unavailable")
)

// RetryableError carries how long the provider asked us to wait.
type RetryableError struct {
	Err        error
	RetryAfter time.Duration // zero when the provider gave no hint
}

func (e *RetryableError) Error() string { return e.Err.Error() }
func (e *RetryableError) Unwrap() []error {
	return []error{e.Err, ErrRetryable}
}
