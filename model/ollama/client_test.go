package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/model"
	pt "github.com/agentloop/agentloop/model/internal/providertest"
)

var tempTool = model.ToolSpec{
	Name:        "get_temperature",
	Description: "Get the current temperature for a city",
	Parameters:  json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string","description":"The name of the city"}}}`),
}

func conversation() *model.Request {
	return &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "Be brief."},
			{Role: model.RoleUser, Content: "Temperature in New York and London?"},
			{Role: model.RoleAssistant, Reasoning: []model.ReasoningBlock{{Type: "thinking", Text: "Two calls."}}, ToolCalls: []model.ToolCall{
				{ID: "call_1", Name: "get_temperature", Arguments: json.RawMessage(`{"city":"New York"}`)},
				{ID: "call_2", Name: "get_temperature", Arguments: json.RawMessage(`"{\"city\": \"Lon"`)},
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "get_temperature", Content: "22°C"},
			{Role: model.RoleTool, ToolCallID: "call_2", Content: "arguments are not an object", IsError: true},
			{Role: model.RoleUser, Content: "Thanks. Again?"},
		},
		Tools:     []model.ToolSpec{tempTool},
		MaxTokens: 512,
	}
}

func newClient(srv *pt.Server, sleeps *pt.Sleeps, mod func(*Config)) *Client {
	n := 0
	cfg := Config{
		BaseURL: srv.URL,
		Model:   "qwen3:8b",
		Retry:   sleeps.Policy(4),
		NewID:   func() string { n++; return "call_gen" + string(rune('0'+n)) },
	}
	if mod != nil {
		mod(&cfg)
	}
	return New(cfg)
}

func TestGenerate(t *testing.T) {
	tests := []struct {
		name   string
		reply  pt.Reply
		stream bool
		want   model.Response
	}{
		{
			name:  "non-streaming text",
			reply: pt.Reply{Header: jsonHeader, Body: pt.Load(t, "chat_text.json")},
			want: model.Response{Text: "Hello! How can I help you today?", FinishReason: "stop", Model: "qwen3:8b",
				Usage: model.Usage{InputTokens: 11, OutputTokens: 18}},
		},
		{
			name:  "non-streaming tool call: done_reason stop becomes tool_calls",
			reply: pt.Reply{Header: jsonHeader, Body: pt.Load(t, "chat_tool_calls.json")},
			want: model.Response{FinishReason: "tool_calls", Model: "qwen3:8b",
				Reasoning: []model.ReasoningBlock{{Type: "thinking", Text: "The user wants the temperature in New York. I should call get_temperature."}},
				ToolCalls: []model.ToolCall{{ID: "call_jd4wj2pa", Name: "get_temperature", Arguments: json.RawMessage(`{"city":"New York"}`)}},
				Usage:     model.Usage{InputTokens: 182, OutputTokens: 41}},
		},
		{
			name:   "NDJSON text stream",
			reply:  pt.Reply{Header: ndjsonHeader, Body: pt.Load(t, "stream_text.ndjson"), Split: "events"},
			stream: true,
			want: model.Response{Text: "The sky is blue.", FinishReason: "stop", Model: "qwen3:8b",
				Usage: model.Usage{InputTokens: 26, OutputTokens: 3}},
		},
		{
			name:   "NDJSON stream: thinking, text, then two tool calls without IDs",
			reply:  pt.Reply{Header: ndjsonHeader, Body: pt.Load(t, "stream_tool_calls.ndjson"), Split: "bytes"},
			stream: true,
			want: model.Response{Text: "Let me check both.", FinishReason: "tool_calls", Model: "qwen3:8b",
				Reasoning: []model.ReasoningBlock{{Type: "thinking", Text: "Two cities, two calls."}},
				ToolCalls: []model.ToolCall{
					{ID: "call_gen1", Name: "get_temperature", Arguments: json.RawMessage(`{"city":"New York"}`)},
					{ID: "call_gen2", Name: "get_temperature", Arguments: json.RawMessage(`{"city":"London","unit":"celsius"}`)},
				},
				Usage: model.Usage{InputTokens: 211, OutputTokens: 57}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := pt.New(t, validateRequest, errorBody, tt.reply)
			c := newClient(srv, &pt.Sleeps{}, func(c *Config) { c.StreamTools = true })
			var text, thinking strings.Builder
			args := map[int]string{}
			var fn model.StreamFunc
			if tt.stream {
				fn = func(d model.Delta) {
					text.WriteString(d.Text)
					thinking.WriteString(d.Reasoning)
					args[d.ToolCallIndex] += d.ArgumentsFragment
				}
			}
			got, err := c.Generate(t.Context(), conversation(), fn)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				gj, _ := json.MarshalIndent(got, "", " ")
				wj, _ := json.MarshalIndent(tt.want, "", " ")
				t.Errorf("got\n%s\nwant\n%s", gj, wj)
			}
			var req struct{ Stream bool }
			_ = json.Unmarshal(srv.Request(0), &req)
			if req.Stream != tt.stream {
				t.Errorf("request stream=%v", req.Stream)
			}
			if tt.stream {
				if text.String() != got.Text {
					t.Errorf("text deltas %q", text.String())
				}
				for i, tc := range got.ToolCalls {
					if args[i] != string(tc.Arguments) {
						t.Errorf("call %d argument deltas %q", i, args[i])
					}
				}
			}
		})
	}
}

// A request that offers tools is not streamed unless StreamTools is set;
// the caller's StreamFunc still sees the whole reply, once.
func TestToolsNotStreamedByDefault(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: jsonHeader, Body: pt.Load(t, "chat_text.json")})
	c := newClient(srv, &pt.Sleeps{}, nil)
	var deltas []model.Delta
	got, err := c.Generate(t.Context(), conversation(), func(d model.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	var req struct{ Stream *bool }
	if err := json.Unmarshal(srv.Request(0), &req); err != nil || req.Stream == nil || *req.Stream {
		t.Fatalf("request with tools must say \"stream\": false: %s", srv.Request(0))
	}
	if len(deltas) != 1 || deltas[0].Text != got.Text || got.Text == "" {
		t.Fatalf("deltas %+v for reply %q", deltas, got.Text)
	}
	// Without tools a streaming caller still gets a stream.
	srv = pt.New(t, validateRequest, errorBody, pt.Reply{Header: ndjsonHeader, Body: pt.Load(t, "stream_text.ndjson"), Split: "events"})
	c = newClient(srv, &pt.Sleeps{}, nil)
	plain := conversation()
	plain.Tools = nil
	if _, err := c.Generate(t.Context(), plain, func(model.Delta) {}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(srv.Request(0), &req); err != nil || !*req.Stream {
		t.Fatalf("request without tools must stream: %s", srv.Request(0))
	}
}

func TestRequestShape(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: jsonHeader, Body: pt.Load(t, "chat_text.json")})
	think := true
	c := newClient(srv, &pt.Sleeps{}, func(c *Config) { c.NumCtx = 32768; c.Think = &think })
	if _, err := c.Generate(t.Context(), conversation(), nil); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"qwen3:8b","messages":[` +
		`{"role":"system","content":"Be brief."},` +
		`{"role":"user","content":"Temperature in New York and London?"},` +
		`{"role":"assistant","content":"","thinking":"Two calls.","tool_calls":[` +
		`{"function":{"name":"get_temperature","arguments":{"city":"New York"}}},` +
		`{"function":{"name":"get_temperature","arguments":{}}}]},` +
		`{"role":"tool","content":"22°C","tool_name":"get_temperature"},` +
		`{"role":"tool","content":"arguments are not an object","tool_name":"get_temperature"},` +
		`{"role":"user","content":"Thanks. Again?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_temperature","description":"Get the current temperature for a city","parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string","description":"The name of the city"}}}}}],` +
		`"stream":false,"think":true,"options":{"num_predict":512,"num_ctx":32768}}` + "\n"
	if got := string(srv.Request(0)); got != want {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
}

func TestValidator(t *testing.T) {
	bad := map[string]string{
		"arguments as a string": `{"model":"m","stream":false,"messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]}`,
		"tool result unnamed":   `{"model":"m","stream":false,"messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{}}}]},{"role":"tool","content":"x"}]}`,
		"no stream field":       `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		"unknown option":        `{"model":"m","stream":false,"messages":[],"options":{"max_tokens":5}}`,
	}
	for name, body := range bad {
		r, _ := http.NewRequest("POST", "http://x/api/chat", nil)
		if validateRequest(r, []byte(body)) == "" {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name      string
		replies   []pt.Reply
		stream    bool
		mod       func(*Config)
		is, isNot []error
		msg       []string
		hits      int
		waits     []time.Duration
		ok        bool
	}{
		{
			name:    "truncated NDJSON stream",
			replies: []pt.Reply{{Header: ndjsonHeader, Body: pt.Load(t, "stream_truncated.ndjson"), Split: "events"}},
			stream:  true, is: []error{model.ErrMalformed},
			msg:  []string{`ollama: malformed reply from`, `the stream ended after 5 lines without a "done": true line (after 1 tool call)`},
			hits: 1,
		},
		{
			name:    "invalid JSON line",
			replies: []pt.Reply{{Header: ndjsonHeader, Body: pt.Load(t, "stream_invalid_json.ndjson")}},
			stream:  true, is: []error{model.ErrMalformed},
			msg:  []string{`line 2 is not valid JSON`},
			hits: 1,
		},
		{
			name:    "error line inside the stream",
			replies: []pt.Reply{{Header: ndjsonHeader, Body: pt.Load(t, "stream_error.ndjson")}},
			stream:  true, isNot: []error{model.ErrRetryable, model.ErrMalformed},
			msg:  []string{`ollama: error in the reply`, `unexpected EOF`},
			hits: 1,
		},
		{
			name:    "200 with text/html",
			replies: []pt.Reply{{Header: map[string]string{"Content-Type": "text/html"}, Body: pt.Load(t, "error_500.html")}},
			is:      []error{model.ErrMalformed},
			msg:     []string{"content type text/html", `"502 Bad Gateway"`},
			hits:    1,
		},
		{
			name:    "model not pulled",
			replies: []pt.Reply{{Status: 404, Header: jsonHeader, Body: pt.Load(t, "error_404.json")}},
			isNot:   []error{model.ErrRetryable},
			msg:     []string{`ollama: HTTP 404 from`, `(model qwen3:8b): model "qwen3:8b" not found, try pulling it first — fetch it with ` + "`ollama pull qwen3:8b`"},
			hits:    1,
		},
		{
			name:    "model without tool support",
			replies: []pt.Reply{{Status: 400, Header: jsonHeader, Body: pt.Load(t, "error_no_tools.json")}},
			msg:     []string{`does not support tools — pick a model that supports tool calling`},
			hits:    1,
		},
		{
			name:    "HTTP 502 HTML from a proxy, retried",
			replies: []pt.Reply{{Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: pt.Load(t, "error_500.html")}},
			mod:     func(c *Config) { c.Retry.MaxAttempts = 3 },
			is:      []error{model.ErrRetryable},
			msg:     []string{`HTTP 502`, `HTML page titled "502 Bad Gateway"`, `gave up after 3 attempts`},
			hits:    3, waits: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond},
		},
		{
			name: "503 with Retry-After, then success",
			replies: []pt.Reply{
				{Status: 503, Header: map[string]string{"Retry-After": "2"}, Body: []byte(`{"error":"server busy, please try again.  maximum pending requests exceeded"}`)},
				{Header: ndjsonHeader, Body: pt.Load(t, "stream_text.ndjson")},
			},
			stream: true, ok: true, hits: 2, waits: []time.Duration{2 * time.Second},
		},
		{
			name:    "idle timeout mid-stream",
			replies: []pt.Reply{{Header: ndjsonHeader, Body: pt.Load(t, "stream_truncated.ndjson"), HangAfter: true}},
			stream:  true, mod: func(c *Config) { c.Timeouts.Idle = 20 * time.Millisecond },
			is:   []error{model.ErrTimeout},
			msg:  []string{"(idle timeout)"},
			hits: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := pt.New(t, validateRequest, errorBody, tt.replies...)
			sleeps := &pt.Sleeps{}
			c := newClient(srv, sleeps, func(c *Config) {
				c.StreamTools = true // the stream cases stream with tools offered
				if tt.mod != nil {
					tt.mod(c)
				}
			})
			var fn model.StreamFunc
			if tt.stream {
				fn = func(model.Delta) {}
			}
			resp, err := c.Generate(t.Context(), conversation(), fn)
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				if err == nil {
					t.Fatalf("no error; reply %+v", resp)
				}
				t.Log(err)
				for _, want := range tt.is {
					if !errors.Is(err, want) {
						t.Errorf("error is not %v", want)
					}
				}
				for _, not := range tt.isNot {
					if errors.Is(err, not) {
						t.Errorf("error is %v", not)
					}
				}
				if m := contains(err.Error(), tt.msg...); m != "" {
					t.Errorf("error lacks %q", m)
				}
			}
			if srv.Hits() != tt.hits {
				t.Errorf("%d requests, want %d", srv.Hits(), tt.hits)
			}
			if tt.waits != nil && !reflect.DeepEqual(sleeps.Waits(), tt.waits) {
				t.Errorf("waits %v, want %v", sleeps.Waits(), tt.waits)
			}
		})
	}
}

// TestNotRunning checks the message a person sees when Ollama is not
// started: it says how to start it, and no time is spent retrying.
func TestNotRunning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sleeps := &pt.Sleeps{}
	c := New(Config{BaseURL: "http://" + addr, Model: "qwen3:8b", Retry: sleeps.Policy(4)})
	_, err = c.Generate(context.Background(), conversation(), nil)
	if err == nil {
		t.Fatal("no error")
	}
	t.Log(err)
	for _, want := range []string{"ollama: cannot reach http://" + addr + "/api/chat (model qwen3:8b)", "connection refused", "`ollama serve`", "`ollama pull qwen3:8b`", "--model"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
	if !errors.Is(err, model.ErrRetryable) {
		t.Error("not retryable: the session should pause until Ollama is up")
	}
	if len(sleeps.Waits()) != 0 {
		t.Errorf("waited %v before reporting", sleeps.Waits())
	}
}
