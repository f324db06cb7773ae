package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// validateRequest applies /api/chat's rules for what this client sends: the
// fields Ollama decodes, tool-call arguments as objects, tool results named
// with tool_name after a call of that name.
func validateRequest(r *http.Request, body []byte) string {
	if r.Method != http.MethodPost || r.URL.Path != "/api/chat" {
		return fmt.Sprintf("%s %s: want POST /api/chat", r.Method, r.URL.Path)
	}
	var req struct {
		Model     string            `json:"model"`
		Messages  []json.RawMessage `json:"messages"`
		Tools     []json.RawMessage `json:"tools"`
		Stream    *bool             `json:"stream"`
		Think     *bool             `json:"think"`
		KeepAlive string            `json:"keep_alive"`
		Format    json.RawMessage   `json:"format"`
		Options   *struct {
			Temperature *float64 `json:"temperature"`
			NumPredict  *int     `json:"num_predict"`
			NumCtx      *int     `json:"num_ctx"`
		} `json:"options"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return "body: " + err.Error()
	}
	if req.Model == "" {
		return "model is required"
	}
	if req.Stream == nil {
		return `"stream" missing: Ollama would stream by default`
	}
	for i, raw := range req.Tools {
		var t struct {
			Type     string `json:"type"`
			Function struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				Parameters  map[string]any `json:"parameters"`
			} `json:"function"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return fmt.Sprintf("tools[%d]: %v", i, err)
		}
		if t.Type != "function" || t.Function.Name == "" || t.Function.Parameters["type"] != "object" {
			return fmt.Sprintf("tools[%d]: want type function, a name and an object schema", i)
		}
	}
	called := map[string]bool{}
	for i, raw := range req.Messages {
		var m struct {
			Role      string   `json:"role"`
			Content   *string  `json:"content"`
			Thinking  string   `json:"thinking"`
			ToolName  string   `json:"tool_name"`
			Images    [][]byte `json:"images"` // base64 strings; a bad one fails to decode
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Index     int            `json:"index"`
					Name      string         `json:"name"`
					Arguments map[string]any `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			// e.g. arguments sent as a string: "cannot unmarshal string into
			// Go struct field ... of type map[string]interface {}"
			return fmt.Sprintf("messages[%d]: %v", i, err)
		}
		switch m.Role {
		case "system", "user", "assistant":
		case "tool":
			if m.ToolName == "" || !called[m.ToolName] {
				return fmt.Sprintf("messages[%d]: tool result needs tool_name of a preceding call, got %q", i, m.ToolName)
			}
		default:
			return fmt.Sprintf("messages[%d]: role %q", i, m.Role)
		}
		if m.Content == nil {
			return fmt.Sprintf("messages[%d]: content missing", i)
		}
		for j, tc := range m.ToolCalls {
			if m.Role != "assistant" || tc.Function.Name == "" || tc.Function.Arguments == nil {
				return fmt.Sprintf("messages[%d].tool_calls[%d]: want an assistant call with name and object arguments", i, j)
			}
			called[tc.Function.Name] = true
		}
	}
	return ""
}

func errorBody(msg string) []byte {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return b
}

var (
	ndjsonHeader = map[string]string{"Content-Type": "application/x-ndjson"}
	jsonHeader   = map[string]string{"Content-Type": "application/json; charset=utf-8"}
)

func contains(s string, subs ...string) string {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return sub
		}
	}
	return ""
}
