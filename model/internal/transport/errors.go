package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentloop/agentloop/model"
)

// Call names one model call in error messages.
type Call struct {
	Provider string // "openai", "openrouter", "ollama", "anthropic", …
	URL      string // the endpoint the request went to
	Model    string
}

func (c Call) where() string {
	return fmt.Sprintf("%s (model %s)", c.URL, c.Model)
}

// StatusError is a non-2xx HTTP reply.
type StatusError struct {
	Call
	StatusCode int
	// Message is the API's own error text, or a description of a body that
	// was not a JSON error (HTML page, garbage) with a short excerpt.
	Message string
	// Hint says what to do, e.g. "check --api-key or OPENAI_API_KEY".
	Hint string
	// RetryAfter is the wait the server asked for, zero when it gave none.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("%s: HTTP %d from %s: %s", e.Provider, e.StatusCode, e.where(), e.Message)
	if e.Hint != "" {
		s += " — " + e.Hint
	}
	return s
}

// Unwrap marks the replies no retry fixes for this model: 404 (the model
// is gone, or never was) and a refusal of the conversation as longer than
// the model's context — model.ErrModelUnavailable, so a session can move
// to a fallback model.
func (e *StatusError) Unwrap() error {
	if e.StatusCode == 404 || (e.StatusCode == 400 || e.StatusCode == 413) && contextTooLong(e.Message) {
		return model.ErrModelUnavailable
	}
	return nil
}

// contextTooLong says whether an API error text refuses a request as too
// long for the model's context window.
func contextTooLong(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"context length", "context_length", "context window", "maximum context", "prompt is too long", "too many tokens"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// TimeoutError is a call that ran past one of the limits in Timeouts. It
// wraps model.ErrTimeout.
type TimeoutError struct {
	Call
	Limit string // "connect", "first-byte", "idle" or "total"
	After time.Duration
}

func (e *TimeoutError) Error() string {
	switch e.Limit {
	case "connect":
		return fmt.Sprintf("%s: could not connect to %s within %s (connect timeout)", e.Provider, e.where(), e.After)
	case "first-byte":
		return fmt.Sprintf("%s: no response from %s within %s (first-byte timeout)", e.Provider, e.where(), e.After)
	case "idle":
		return fmt.Sprintf("%s: response from %s stalled: no data for %s (idle timeout)", e.Provider, e.where(), e.After)
	default:
		return fmt.Sprintf("%s: call to %s did not finish within %s (total timeout)", e.Provider, e.where(), e.After)
	}
}

func (e *TimeoutError) Unwrap() error { return model.ErrTimeout }

// MalformedError is a reply that could not be parsed: a truncated stream,
// invalid JSON, a wrong content type. It wraps model.ErrMalformed.
type MalformedError struct {
	Call
	Detail string
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("%s: malformed reply from %s: %s", e.Provider, e.where(), e.Detail)
}

func (e *MalformedError) Unwrap() error { return model.ErrMalformed }

// NetError is a failure to reach the server or to keep reading from it.
type NetError struct {
	Call
	Op   string // "cannot reach" or "connection lost while reading"
	Err  error
	Hint string
}

func (e *NetError) Error() string {
	s := fmt.Sprintf("%s: %s %s: %v", e.Provider, e.Op, e.where(), e.Err)
	if e.Hint != "" {
		s += " — " + e.Hint
	}
	return s
}

func (e *NetError) Unwrap() error { return e.Err }

// APIErrorText extracts the error text from a JSON error body in the shapes
// the supported APIs use:
//
//	{"error": {"message": "...", "type": "...", "code": "..."}}  OpenAI, OpenRouter, Anthropic
//	{"error": "..."}                                              Ollama, llama.cpp
//	{"message": "...", "type": "..."}                             vLLM
//	{"detail": "..."}                                             FastAPI servers
//	[{"error": {...}}]                                            Gemini
//
// It returns false when the body is not one of them.
func APIErrorText(body []byte) (string, bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			return "", false
		}
		body = arr[0]
	}
	var top struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &top) != nil {
		return "", false
	}
	if len(top.Error) > 0 && top.Error[0] == '"' {
		var s string
		if json.Unmarshal(top.Error, &s) == nil && s != "" {
			return s, true
		}
	}
	if len(top.Error) > 0 && top.Error[0] == '{' {
		var e struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(top.Error, &e) == nil && e.Message != "" {
			return withKind(e.Message, e.Type, e.Code), true
		}
	}
	if top.Message != "" && top.Type != "error" {
		return withKind(top.Message, top.Type, nil), true
	}
	if len(top.Detail) > 0 {
		var s string
		if json.Unmarshal(top.Detail, &s) == nil && s != "" {
			return s, true
		}
		return string(top.Detail), true
	}
	return "", false
}

func withKind(msg, typ string, code json.RawMessage) string {
	kind := typ
	if len(code) > 0 && code[0] == '"' {
		kind = strings.Trim(string(code), `"`)
	}
	if kind == "" || strings.Contains(msg, kind) {
		return msg
	}
	return msg + " (" + kind + ")"
}

// DescribeBody says what a body that is not a JSON error looks like, with a
// short excerpt, e.g. `the body is an HTML page ("502 Bad Gateway"), not JSON`.
func DescribeBody(mediaType string, body []byte) string {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return "empty response body"
	}
	if mediaType == "text/html" || bytes.HasPrefix(trimmed, []byte("<")) {
		if title := htmlTitle(trimmed); title != "" {
			return fmt.Sprintf("the body is an HTML page titled %q, not JSON", title)
		}
		return fmt.Sprintf("the body is HTML, not JSON: %q", Excerpt(trimmed, 120))
	}
	return fmt.Sprintf("the body is not a JSON error (content type %q): %q", mediaType, Excerpt(trimmed, 120))
}

func htmlTitle(b []byte) string {
	// Lower case ASCII only: bytes.ToLower changes the length of invalid
	// UTF-8 (a Latin-1 page), and the offsets must hold in b.
	lower := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	i := bytes.Index(lower, []byte("<title>"))
	if i < 0 {
		return ""
	}
	rest, lrest := b[i+len("<title>"):], lower[i+len("<title>"):]
	j := bytes.Index(lrest, []byte("</title>"))
	if j < 0 {
		return ""
	}
	return strings.Join(strings.Fields(string(rest[:j])), " ")
}

// Excerpt returns at most n bytes of b with whitespace runs collapsed, cut
// on a rune boundary, with "…" when cut.
func Excerpt(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
