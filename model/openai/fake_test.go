package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// validateRequest applies the Chat Completions API's rules for the parts of
// a request this client sends, returning the first problem the real API
// would answer with a 400.
func validateRequest(r *http.Request, body []byte) string {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return fmt.Sprintf("%s %s: want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		return fmt.Sprintf("Authorization header %q", got)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return fmt.Sprintf("Content-Type %q", ct)
	}
	var req struct {
		Model               string            `json:"model"`
		Messages            []json.RawMessage `json:"messages"`
		Tools               []json.RawMessage `json:"tools"`
		MaxTokens           *int              `json:"max_tokens"`
		MaxCompletionTokens *int              `json:"max_completion_tokens"`
		Temperature         *float64          `json:"temperature"`
		Stream              *bool             `json:"stream"`
		StreamOptions       *struct {
			IncludeUsage *bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return "body: " + err.Error()
	}
	if req.Model == "" {
		return "you must provide a model parameter"
	}
	if len(req.Messages) == 0 {
		return "messages: empty array"
	}
	if req.StreamOptions != nil && (req.Stream == nil || !*req.Stream) {
		return "stream_options is only allowed when stream is true"
	}
	if req.MaxTokens != nil && req.MaxCompletionTokens != nil {
		return "max_tokens and max_completion_tokens are mutually exclusive"
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 2) {
		return "temperature out of range"
	}
	for i, raw := range req.Tools {
		if p := validateTool(raw); p != "" {
			return fmt.Sprintf("tools[%d]: %s", i, p)
		}
	}
	var pending []string // tool_call ids still to be answered
	for i, raw := range req.Messages {
		var m struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID *string         `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return fmt.Sprintf("messages[%d]: %v", i, err)
		}
		isString := len(m.Content) > 0 && m.Content[0] == '"'
		isNull := len(m.Content) == 0 || string(m.Content) == "null"
		if len(pending) > 0 && m.Role != "tool" {
			return fmt.Sprintf("messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; missing %v", i, pending)
		}
		switch m.Role {
		case "system":
			if !isString {
				return fmt.Sprintf("messages[%d].content: %s must be a string", i, m.Role)
			}
		case "user":
			if !isString {
				if p := validateParts(m.Content); p != "" {
					return fmt.Sprintf("messages[%d].content: %s", i, p)
				}
			}
		case "assistant":
			if isNull && len(m.ToolCalls) == 0 {
				return fmt.Sprintf("messages[%d]: assistant content is required unless tool_calls is specified", i)
			}
			if !isNull && !isString {
				return fmt.Sprintf("messages[%d].content: must be a string or null", i)
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" {
					return fmt.Sprintf("messages[%d].tool_calls[%d]: id, type \"function\" and function.name are required", i, j)
				}
				var args string
				if json.Unmarshal(tc.Function.Arguments, &args) != nil {
					return fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments: expected a string, got %s", i, j, tc.Function.Arguments)
				}
				if !json.Valid([]byte(args)) {
					return fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments: not JSON: %q", i, j, args)
				}
				pending = append(pending, tc.ID)
			}
		case "tool":
			if m.ToolCallID == nil || !isString {
				return fmt.Sprintf("messages[%d]: tool messages need tool_call_id and string content", i)
			}
			k := indexOf(pending, *m.ToolCallID)
			if k < 0 {
				return fmt.Sprintf("messages[%d]: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (id %q)", i, *m.ToolCallID)
			}
			pending = append(pending[:k], pending[k+1:]...)
		default:
			return fmt.Sprintf("messages[%d].role: invalid value %q", i, m.Role)
		}
		if m.Role != "assistant" && len(m.ToolCalls) > 0 {
			return fmt.Sprintf("messages[%d]: tool_calls on a %s message", i, m.Role)
		}
		if m.Role != "tool" && m.ToolCallID != nil {
			return fmt.Sprintf("messages[%d]: tool_call_id on a %s message", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return fmt.Sprintf("tool calls %v have no tool message", pending)
	}
	return ""
}

// validateParts checks a user message's array of content parts: text
// parts and image_url parts whose url is an https URL or a base64 data URL
// of an image.
func validateParts(raw json.RawMessage) string {
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil || len(parts) == 0 {
		return "must be a string or a non-empty array of content parts"
	}
	for j, rp := range parts {
		var p struct {
			Type     string  `json:"type"`
			Text     *string `json:"text"`
			ImageURL *struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			} `json:"image_url"`
		}
		dec := json.NewDecoder(bytes.NewReader(rp))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return fmt.Sprintf("[%d]: %v", j, err)
		}
		switch p.Type {
		case "text":
			if p.Text == nil || p.ImageURL != nil {
				return fmt.Sprintf("[%d]: a text part has text and nothing else", j)
			}
		case "image_url":
			if p.ImageURL == nil || p.Text != nil {
				return fmt.Sprintf("[%d]: an image_url part has image_url and nothing else", j)
			}
			u := p.ImageURL.URL
			if data, ok := strings.CutPrefix(u, "data:image/"); ok {
				_, b64, ok := strings.Cut(data, ";base64,")
				if _, err := base64.StdEncoding.DecodeString(b64); !ok || err != nil {
					return fmt.Sprintf("[%d].image_url.url: invalid base64 data URL", j)
				}
			} else if !strings.HasPrefix(u, "https://") {
				return fmt.Sprintf("[%d].image_url.url: want an https URL or a data:image/ URL", j)
			}
		default:
			return fmt.Sprintf("[%d].type: invalid value %q", j, p.Type)
		}
	}
	return ""
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func validateTool(raw json.RawMessage) string {
	var t struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		} `json:"function"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return err.Error()
	}
	if t.Type != "function" {
		return fmt.Sprintf("type %q, want \"function\"", t.Type)
	}
	if !toolName.MatchString(t.Function.Name) {
		return fmt.Sprintf("function.name %q must match ^[a-zA-Z0-9_-]{1,64}$", t.Function.Name)
	}
	var schema map[string]any
	if json.Unmarshal(t.Function.Parameters, &schema) != nil || schema["type"] != "object" {
		return "function.parameters must be a JSON Schema object with type \"object\""
	}
	return ""
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func errorBody(msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": nil,
	}})
	return b
}

// sseHeader is what OpenAI sends with a stream.
var sseHeader = map[string]string{"Content-Type": "text/event-stream; charset=utf-8"}

var jsonHeader = map[string]string{"Content-Type": "application/json"}

func contains(s string, subs ...string) string {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return sub
		}
	}
	return ""
}
