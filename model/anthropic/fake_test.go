package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// validateRequest applies the Messages API's rules for what this client
// sends, returning the first problem the real API would answer with a 400.
func validateRequest(r *http.Request, body []byte) string {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return fmt.Sprintf("%s %s: want POST /v1/messages", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("X-Api-Key"); got != "sk-ant-test" {
		return fmt.Sprintf("x-api-key %q", got)
	}
	if got := r.Header.Get("Anthropic-Version"); got != "2023-06-01" {
		return fmt.Sprintf("anthropic-version %q", got)
	}
	var req struct {
		Model       string            `json:"model"`
		MaxTokens   *int              `json:"max_tokens"`
		System      json.RawMessage   `json:"system"`
		Messages    []json.RawMessage `json:"messages"`
		Tools       []json.RawMessage `json:"tools"`
		Temperature *float64          `json:"temperature"`
		Stream      *bool             `json:"stream"`
		Thinking    *struct {
			Type         string `json:"type"`
			BudgetTokens int    `json:"budget_tokens"`
		} `json:"thinking"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return "body: " + err.Error()
	}
	if req.Model == "" {
		return "model: Field required"
	}
	if req.MaxTokens == nil || *req.MaxTokens < 1 {
		return "max_tokens: Field required"
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1) {
		return "temperature: must be between 0 and 1"
	}
	if req.Thinking != nil {
		if req.Thinking.Type != "enabled" || req.Thinking.BudgetTokens < 1024 || req.Thinking.BudgetTokens >= *req.MaxTokens {
			return "thinking: budget_tokens must be ≥ 1024 and less than max_tokens"
		}
		if req.Temperature != nil {
			return "temperature may only be set to 1 when thinking is enabled"
		}
	}
	if len(req.System) > 0 && req.System[0] != '"' {
		return "system: this client sends a string"
	}
	for i, raw := range req.Tools {
		var t struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return fmt.Sprintf("tools.%d: %v", i, err)
		}
		if !toolName.MatchString(t.Name) || t.InputSchema["type"] != "object" {
			return fmt.Sprintf("tools.%d: name must match %s and input_schema must have type object", i, toolName)
		}
	}
	if len(req.Messages) == 0 {
		return "messages: at least one message is required"
	}
	var pending []string // tool_use ids the next user turn must answer
	for i, raw := range req.Messages {
		var m struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return fmt.Sprintf("messages.%d: %v", i, err)
		}
		if i == 0 && m.Role != "user" {
			return "messages.0: the first message must use the user role"
		}
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Sprintf("messages.%d: Unexpected role %q. Allowed roles are \"user\" or \"assistant\"", i, m.Role)
		}
		if len(m.Content) == 0 {
			return fmt.Sprintf("messages.%d: all messages must have non-empty content", i)
		}
		if len(pending) > 0 && m.Role != "user" {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %v", i, pending)
		}
		answered := map[string]bool{}
		var uses []string
		sawOther := false
		for j, rawb := range m.Content {
			var b struct {
				Type      string          `json:"type"`
				Text      *string         `json:"text"`
				Thinking  *string         `json:"thinking"`
				Signature string          `json:"signature"`
				Data      string          `json:"data"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   *bool           `json:"is_error"`
				Source    json.RawMessage `json:"source"`
			}
			dec := json.NewDecoder(bytes.NewReader(rawb))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&b); err != nil {
				return fmt.Sprintf("messages.%d.content.%d: %v", i, j, err)
			}
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch {
			case b.Type == "text":
				if b.Text == nil || strings.TrimSpace(*b.Text) == "" {
					return where + ": text content blocks must be non-empty"
				}
				sawOther = true
			case b.Type == "tool_result" && m.Role == "user":
				if sawOther {
					return where + ": tool_result blocks must come before any other content in a user message"
				}
				if indexOf(pending, b.ToolUseID) < 0 {
					return fmt.Sprintf("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", where, b.ToolUseID)
				}
				if p := validateResultContent(b.Content); p != "" {
					return where + ".content: " + p
				}
				answered[b.ToolUseID] = true
			case b.Type == "image" && m.Role == "user":
				if p := validateImageSource(b.Source); p != "" {
					return where + ".source: " + p
				}
				sawOther = true
			case b.Type == "tool_use" && m.Role == "assistant":
				if b.ID == "" || !toolName.MatchString(b.Name) || len(b.Input) == 0 || b.Input[0] != '{' {
					return where + ": tool_use needs id, name and an object input"
				}
				uses = append(uses, b.ID)
			case b.Type == "thinking" && m.Role == "assistant":
				if b.Thinking == nil || b.Signature == "" {
					return where + ": thinking blocks need thinking and signature"
				}
				if j != 0 && !strings.Contains(string(m.Content[j-1]), "thinking") {
					return where + ": thinking blocks must come first"
				}
			case b.Type == "redacted_thinking" && m.Role == "assistant":
				if b.Data == "" {
					return where + ": redacted_thinking needs data"
				}
			default:
				return fmt.Sprintf("%s: block type %q is not allowed in a %s message", where, b.Type, m.Role)
			}
		}
		for _, id := range pending {
			if !answered[id] {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, id)
			}
		}
		pending = uses
		if req.Thinking != nil && i == len(req.Messages)-2 && len(uses) > 0 && !strings.Contains(string(m.Content[0]), `"thinking"`) && !strings.Contains(string(m.Content[0]), `"redacted_thinking"`) {
			return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found another block. When `thinking` is enabled, a final `assistant` message must start with a thinking block", i)
		}
	}
	if len(pending) > 0 {
		return fmt.Sprintf("the last assistant turn's tool_use %v has no tool_result", pending)
	}
	return ""
}

// validateResultContent checks a tool_result's content: absent, a string,
// or a list of text and image blocks.
func validateResultContent(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] == '"' {
		return ""
	}
	var blocks []struct {
		Type   string          `json:"type"`
		Text   *string         `json:"text"`
		Source json.RawMessage `json:"source"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "Input should be a valid string or list of blocks"
	}
	for k, b := range blocks {
		switch {
		case b.Type == "text" && b.Text != nil && b.Source == nil:
		case b.Type == "image" && b.Text == nil:
			if p := validateImageSource(b.Source); p != "" {
				return fmt.Sprintf("%d.source: %s", k, p)
			}
		default:
			return fmt.Sprintf("%d: want a text or an image block", k)
		}
	}
	return ""
}

// validateImageSource checks {"type":"base64","media_type":…,"data":…}.
func validateImageSource(raw json.RawMessage) string {
	var src struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&src); err != nil {
		return err.Error()
	}
	switch src.MediaType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
	default:
		return fmt.Sprintf("media_type %q: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", src.MediaType)
	}
	if _, err := base64.StdEncoding.DecodeString(src.Data); src.Type != "base64" || err != nil || src.Data == "" {
		return "want type base64 and base64 data"
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
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": msg}})
	return b
}

var (
	sseHeader  = map[string]string{"Content-Type": "text/event-stream; charset=utf-8"}
	jsonHeader = map[string]string{"Content-Type": "application/json"}
)

func contains(s string, subs ...string) string {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return sub
		}
	}
	return ""
}
