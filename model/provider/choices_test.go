package provider

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// sent opens spec against a server that records the request body and
// answers 401, makes one call and returns the body as JSON.
func sent(t *testing.T, spec, thinking string, req *model.Request) (map[string]any, error) {
	t.Helper()
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		w.Write([]byte(`{"error":{"message":"bad key","type":"authentication_error"}}`))
	}))
	defer srv.Close()
	env := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}
	m, err := Open(spec, Options{BaseURL: srv.URL, Thinking: thinking, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		return nil, err
	}
	_, err = m.Generate(t.Context(), req, nil)
	if body == nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s sent %s", spec, body)
	}
	return out, nil
}

func toolRequest(choice string) *model.Request {
	temp := 0.2
	return &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}, ToolChoice: choice, Temperature: &temp,
		Tools: []model.ToolSpec{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}}}
}

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// --thinking reaches each API as its own parameter, within its rules.
func TestThinkingOnTheWire(t *testing.T) {
	// Anthropic: a budget, max_tokens above it, no temperature.
	got, _ := sent(t, "anthropic/claude-sonnet-4-5", "high", toolRequest(""))
	if asJSON(got["thinking"]) != `{"budget_tokens":24576,"type":"enabled"}` || got["max_tokens"].(float64) <= 24576 || got["temperature"] != nil {
		t.Fatalf("anthropic high: %s", asJSON(got))
	}
	got, _ = sent(t, "anthropic/claude-sonnet-4-5", "5000", toolRequest(""))
	if asJSON(got["thinking"]) != `{"budget_tokens":5000,"type":"enabled"}` {
		t.Fatalf("anthropic 5000: %s", asJSON(got["thinking"]))
	}
	// OpenAI-compatible: reasoning_effort.
	got, _ = sent(t, "openai/o4-mini", "medium", toolRequest(""))
	if got["reasoning_effort"] != "medium" {
		t.Fatalf("openai: %s", asJSON(got))
	}
	// Ollama: think.
	got, _ = sent(t, "ollama/qwen3:8b", "low", toolRequest(""))
	if got["think"] != true {
		t.Fatalf("ollama: %s", asJSON(got))
	}
	// Off: none of them.
	got, _ = sent(t, "openai/gpt-4.1-mini", "", toolRequest(""))
	if _, ok := got["reasoning_effort"]; ok {
		t.Fatalf("off: %s", asJSON(got))
	}
	for _, bad := range []struct{ spec, value, want string }{
		{"anthropic/claude-sonnet-4-5", "100", "at least 1024"},
		{"anthropic/claude-sonnet-4-5", "lots", "use low, medium, high"},
		{"openai/o4-mini", "4096", "a token budget is for anthropic models"},
	} {
		if _, err := sent(t, bad.spec, bad.value, toolRequest("")); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s --thinking %s: %v", bad.spec, bad.value, err)
		}
	}
}

// tool_choice in each API's form.
func TestToolChoiceOnTheWire(t *testing.T) {
	for _, tt := range []struct{ choice, openai, anthropic string }{
		{"", `null`, `null`},
		{"auto", `"auto"`, `{"type":"auto"}`},
		{"required", `"required"`, `{"type":"any"}`},
		{"none", `"none"`, `{"type":"none"}`},
		{"read_file", `{"function":{"name":"read_file"},"type":"function"}`, `{"name":"read_file","type":"tool"}`},
	} {
		got, _ := sent(t, "openai/gpt-4.1-mini", "", toolRequest(tt.choice))
		if asJSON(got["tool_choice"]) != tt.openai {
			t.Errorf("openai %q: %s", tt.choice, asJSON(got["tool_choice"]))
		}
		got, _ = sent(t, "anthropic/claude-sonnet-4-5", "", toolRequest(tt.choice))
		if asJSON(got["tool_choice"]) != tt.anthropic {
			t.Errorf("anthropic %q: %s", tt.choice, asJSON(got["tool_choice"]))
		}
	}
	// Ollama has no tool_choice: "none" offers no tools.
	got, _ := sent(t, "ollama/qwen3:8b", "", toolRequest("none"))
	if _, ok := got["tools"]; ok {
		t.Fatalf("ollama none: %s", asJSON(got))
	}
	// Anthropic refuses a forced tool with extended thinking: said before sending.
	if _, err := sent(t, "anthropic/claude-sonnet-4-5", "low", toolRequest("required")); err == nil || !strings.Contains(err.Error(), "with extended thinking") {
		t.Fatalf("thinking + required: %v", err)
	}
}

// reasoning_content goes back only for the tool loop under way: replies
// before the last user message go without it (DeepSeek refuses it there).
func TestReasoningSentBackForTheCurrentLoopOnly(t *testing.T) {
	think := []model.ReasoningBlock{{Type: "thinking", Text: "hmm"}}
	call := []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{}`), Extra: json.RawMessage(`{"google":{"thought_signature":"s"}}`)}}
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: "first"},
		{Role: model.RoleAssistant, Content: "old answer", Reasoning: think},
		{Role: model.RoleUser, Content: "second"},
		{Role: model.RoleAssistant, ToolCalls: call, Reasoning: think},
		{Role: model.RoleTool, ToolCallID: "c1", Content: "x"},
	}}
	got, _ := sent(t, "deepseek/deepseek-chat", "", req)
	msgs := got["messages"].([]any)
	if _, ok := msgs[1].(map[string]any)["reasoning_content"]; ok {
		t.Fatalf("reasoning sent for an earlier turn: %s", asJSON(msgs[1]))
	}
	cur := msgs[3].(map[string]any)
	if cur["reasoning_content"] != "hmm" || !strings.Contains(asJSON(cur["tool_calls"]), `"extra_content":{"google":{"thought_signature":"s"}}`) {
		t.Fatalf("current loop: %s", asJSON(cur))
	}
}
