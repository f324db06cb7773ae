// Package api is the wire format of agentloop's HTTP API (/v1): the
// bodies clients send and receive. Types only — no behaviour, nothing
// beyond the standard library — so a client links this and net/http and
// nothing of the server. Package server answers with these shapes;
// package client sends and reads them.
package api

import (
	"encoding/json"
	"time"
)

// StartRequest is the body of POST /v1/sessions. A session is asked one
// of three ways, told apart by shape: a task, a conversation (messages),
// or a system prompt and a user message. Everything else is optional and
// may only narrow what the server allows.
type StartRequest struct {
	Task         string    `json:"task,omitempty"`
	Messages     []Message `json:"messages,omitempty"`
	SystemPrompt string    `json:"system_prompt,omitempty"`
	UserMessage  string    `json:"user_message,omitempty"`
	Model        string    `json:"model,omitempty"`
	// FallbackModels are the models, in order, the session moves to when
	// its model keeps failing with errors a retry cannot fix; each must
	// be a model the server accepts for Model.
	FallbackModels []string `json:"fallback_models,omitempty"`
	Mode           string   `json:"mode,omitempty"`
	Workspace      string   `json:"workspace,omitempty"`
	Profile        string   `json:"profile,omitempty"`
	// Prompt names a stored system prompt: "name" (its latest version) or
	// "name@3"; the session records which version it ran with.
	Prompt        string   `json:"prompt,omitempty"`
	Approval      string   `json:"approval,omitempty"`
	MaxIterations int      `json:"max_iterations,omitempty"`
	Timeout       string   `json:"timeout,omitempty"`
	BudgetTokens  int      `json:"budget_tokens,omitempty"`
	BudgetUSD     float64  `json:"budget_usd,omitempty"`
	Verify        []string `json:"verify,omitempty"`
	// Tools narrows the session's tools to these names.
	Tools []string `json:"tools,omitempty"`
	// Protocol is a protocol file of the server's (servers started with
	// --allow-script-models only).
	Protocol string            `json:"protocol,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Thinking lets a reasoning model think: low, medium, high or a
	// token budget (Anthropic).
	Thinking string `json:"thinking,omitempty"`
	// Notify is a URL the server POSTs signed notifications to when the
	// session waits for a person, is paused, or ends.
	Notify string `json:"notify,omitempty"`
	// AnswerSchema is a JSON Schema (an object, at most 64 KiB, no
	// references to other documents) the final answer must match: the
	// model is told it, a wrong answer is corrected once, a second one
	// ends the session failed (invalid_answer); the accepted answer is
	// the session's answer_json.
	AnswerSchema json.RawMessage `json:"answer_schema,omitempty"`
	// MaxOutputTokens caps each model call's output (the request's max
	// tokens); 0: the profile's or the provider's.
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
}

// Message is one message of a conversation a session starts from.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName names the tool a tool message answers.
	ToolName string `json:"tool_name,omitempty"`
	// IsError marks a tool result that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// Reasoning is provider thinking to send back verbatim.
	Reasoning []ReasoningBlock `json:"reasoning,omitempty"`
}

// ToolCall is a call an assistant message asked for.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Extra     json.RawMessage `json:"extra,omitempty"`
}

// ReasoningBlock is a thinking block a provider wants returned unchanged.
type ReasoningBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// Created is the answer to a start.
type Created struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	URL    string `json:"url"`
}

// Summary is the one-line view of a session, as GET /v1/sessions lists it.
type Summary struct {
	ID            string            `json:"id"`
	Tenant        string            `json:"tenant,omitempty"`
	Task          string            `json:"task"`
	Model         string            `json:"model,omitempty"`
	Status        string            `json:"status"`
	Reason        string            `json:"reason,omitempty"`
	Iteration     int               `json:"iteration"`
	MaxIterations int               `json:"max_iterations,omitempty"`
	Tokens        int               `json:"tokens"`
	CostUSD       float64           `json:"cost_usd,omitempty"`
	CreatedAt     time.Time         `json:"created_at"`
	UpdatedAt     time.Time         `json:"updated_at"`
	LastSeq       int64             `json:"last_seq"`
	Workspace     string            `json:"workspace,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	// ForkedFrom is set on a fork: the session and step it was made from.
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty"`
}

// ListPage is GET /v1/sessions.
type ListPage struct {
	Sessions   []Summary `json:"sessions"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// Event is one event of a session's log. Data's shape depends on Type
// and Version (the event schema); a reader that does not know a type or a
// version must not guess at it.
type Event struct {
	SessionID string          `json:"session_id"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Version   int             `json:"v"`
	Time      time.Time       `json:"time"`
	Data      json.RawMessage `json:"data"`
}

// EventsPage is GET /v1/sessions/{id}/events as JSON.
type EventsPage struct {
	Events []Event `json:"events"`
	// Next is the after= of the next page (the last seq returned).
	Next int64 `json:"next"`
}

// Control is the body of POST /v1/sessions/{id}/pause|resume|terminate|reply.
type Control struct {
	Reason string `json:"reason,omitempty"`
	Note   string `json:"note,omitempty"`
	Text   string `json:"text,omitempty"`
}

// ControlResult is what a control or a decision did.
type ControlResult struct {
	ID      string `json:"id"`
	Applied bool   `json:"applied"`
	Outcome string `json:"outcome"`
	Status  string `json:"status,omitempty"`
	// Request is the durable request the process running the session
	// will honour, when this server does not run it.
	Request *ControlRequest `json:"request,omitempty"`
}

// ControlRequest is a stored control request.
type ControlRequest struct {
	ID        int64           `json:"id"`
	SessionID string          `json:"session_id"`
	Kind      string          `json:"kind"`
	Text      string          `json:"text,omitempty"`
	Decision  json.RawMessage `json:"decision,omitempty"`
	Subject   string          `json:"subject,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	Done      bool            `json:"done"`
	Outcome   string          `json:"outcome,omitempty"`
}

// Decision is the body of POST /v1/sessions/{id}/approvals/{call}.
type Decision struct {
	// Approve is required: true runs the call, false refuses it.
	Approve *bool `json:"approve"`
	// ArgsHash, when given, must match the pending call's arguments.
	ArgsHash string `json:"args_hash,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Arguments, when given, replace the call's arguments (an edit).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ForSession, with approve, allows the same tool with the same
	// arguments for the rest of the session: it runs without asking until
	// the allowance is revoked (DELETE …/allowances/{args_hash}).
	ForSession bool `json:"for_session,omitempty"`
}

// Problem is an error answer (application/problem+json, RFC 9457).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}
