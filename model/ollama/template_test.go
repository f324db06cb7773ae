package ollama

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// Cases from Ollama's tools/template_test.go (TestParseTag).
func TestCallPrefix(t *testing.T) {
	for _, tc := range []struct{ name, tmpl, want string }{
		{"empty", "", ""},
		{"no tag", "{{if .ToolCalls}}{{end}}", "{"},
		{"no tag with range", "{{if .ToolCalls}}{{range .ToolCalls}}{{ . }}{{end}}{{end}}", "{"},
		{"json fence", "{{if .ToolCalls}}```json\n{{end}}", "```json"},
		{"square brackets", "{{if .ToolCalls}}[{{range .ToolCalls}}{{ . }}{{end}}]{{end}}", "["},
		{"square brackets with whitespace", "{{if .ToolCalls}}\n [ {{range .ToolCalls}}{{ . }}{{end}}]{{end}}", "["},
		{"trailing ]", "{{if .ToolCalls}}{{range .ToolCalls}}{{ . }}{{end}}]{{end}}", "{"},
		{"json objects", `{{if .ToolCalls}}{{range .ToolCalls}}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}{{end}}{{end}}`, "{"},
		{"deepseek before and after range", "{{if .ToolCalls}}<|tool▁calls▁begin|>{{range .ToolCalls}}<|tool▁call▁begin|>functionget_current_weather\n```json\n{\"location\": \"Tokyo\"}\n```<|tool▁call▁end|>\n{{end}}<|tool▁calls▁end|>{{end}}", "<|tool▁calls▁begin|>"},
		{"after range", `{{if .ToolCalls}}{{range .ToolCalls}}<tool_call>{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}</tool_call>{{end}}{{end}}`, "<tool_call>"},
		{"multiple text nodes", "{{if .ToolCalls}}First text{{if .Something}}inner{{end}}Second text{{end}}", "First text"},
		{"action tag", "{{if .ToolCalls}}Action: ```json{{end}}", "Action: ```json"},
		{"functools", "{{if .ToolCalls}}functools[{{end}}", "functools["},
		{"mistral", "{{if .ToolCalls}}[TOOL_CALLS] [{{end}}", "[TOOL_CALLS] ["},
		{"nested in else", "{{if .System}}x{{else}}{{if .ToolCalls}}<tool_call>{{end}}{{end}}", "<tool_call>"},
		{"broken template", "{{if .ToolCalls}", ""},
	} {
		if got := CallPrefix(tc.tmpl); got != tc.want {
			t.Errorf("%s: CallPrefix = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// ollamaWithTemplate serves /api/chat with reply (after checking the
// request as the real API would) and /api/show with the model's template.
func ollamaWithTemplate(t *testing.T, tmpl, reply string, shows *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/api/show":
			shows.Add(1)
			var req struct{ Model string }
			if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil || req.Model == "" {
				t.Errorf("/api/show: %s %s", r.Method, body)
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			json.NewEncoder(w).Encode(map[string]any{"template": tmpl, "modelfile": "FROM x"})
		default:
			if msg := validateRequest(r, body); msg != "" {
				t.Errorf("request would be rejected: %s", msg)
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			json.NewEncoder(w).Encode(map[string]any{
				"model": "qwen3:8b", "created_at": "2025-10-17T23:14:07Z",
				"message": map[string]any{"role": "assistant", "content": reply},
				"done":    true, "done_reason": "stop", "prompt_eval_count": 11, "eval_count": 18,
			})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The prefix of the model's template decides what Ollama's parser left in
// the text: a call behind it is recovered; a bare call after text is text
// when the template writes a prefix; JSON at the start is a call when the
// template writes none.
func TestRecoverWithTemplatePrefix(t *testing.T) {
	const qwen = `{{if .ToolCalls}}<tool_call>{{range .ToolCalls}}{"name": "{{.Function.Name}}", "arguments": {{.Function.Arguments}}}{{end}}</tool_call>{{end}}`
	const llama = `{{if .ToolCalls}}{{range .ToolCalls}}{"name": "{{.Function.Name}}", "parameters": {{.Function.Arguments}}}{{end}}{{end}}`
	call := `{"name": "get_temperature", "arguments": {"city": "Paris"}}`
	for _, tc := range []struct {
		name, tmpl, reply, text string
		calls                   int
	}{
		{"behind the prefix", qwen, "Checking.\n<tool_call>" + call + "</tool_call>", "Checking.", 1},
		{"bare call after text is text", qwen, "You could call it like this: " + call, "You could call it like this: " + call, 0},
		{"prefix after an empty think", qwen, "<think></think><tool_call>" + call + "</tool_call>", "", 1},
		{"no prefix, JSON first", llama, call, "", 1},
		{"no prefix, text first", llama, "Here: " + call, "Here: " + call, 0},
		{"plain text asks nothing", qwen, "It is sunny.", "It is sunny.", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var shows atomic.Int32
			srv := ollamaWithTemplate(t, tc.tmpl, tc.reply, &shows)
			c := New(Config{BaseURL: srv.URL, Model: "qwen3:8b"})
			req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Weather in Paris?"}}, Tools: []model.ToolSpec{tempTool}}
			for range 2 {
				resp, err := c.Generate(t.Context(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.ToolCalls) != tc.calls || resp.Text != tc.text {
					t.Fatalf("calls %+v, text %q; want %d calls, text %q", resp.ToolCalls, resp.Text, tc.calls, tc.text)
				}
				// A call-like text the template's rule calls text is marked
				// read, so the runner does not recover it with looser rules.
				if wantRead := tc.calls == 0 && strings.Contains(tc.reply, call); resp.TextRead != wantRead {
					t.Fatalf("TextRead %v, want %v", resp.TextRead, wantRead)
				}
				if tc.calls > 0 {
					if resp.FinishReason != model.FinishToolCalls || resp.ToolCalls[0].ID == "" || string(resp.ToolCalls[0].Arguments) != `{"city":"Paris"}` {
						t.Fatalf("call %+v, finish %q", resp.ToolCalls[0], resp.FinishReason)
					}
				}
			}
			want := int32(1)
			if tc.name == "plain text asks nothing" {
				want = 0
			}
			if n := shows.Load(); n != want {
				t.Errorf("/api/show asked %d times over two replies, want %d", n, want)
			}
		})
	}
	t.Run("NoRecover", func(t *testing.T) {
		var shows atomic.Int32
		srv := ollamaWithTemplate(t, qwen, "<tool_call>"+call+"</tool_call>", &shows)
		c := New(Config{BaseURL: srv.URL, Model: "qwen3:8b", NoRecover: true})
		resp, err := c.Generate(t.Context(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "x"}}, Tools: []model.ToolSpec{tempTool}}, nil)
		if err != nil || len(resp.ToolCalls) != 0 || shows.Load() != 0 {
			t.Fatalf("NoRecover: %v, %+v, %d show requests", err, resp, shows.Load())
		}
	})
}
