package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/model"
	pt "github.com/agentloop/agentloop/model/internal/providertest"
	"github.com/agentloop/agentloop/model/internal/transport"
)

var weatherTool = model.ToolSpec{
	Name:        "get_weather",
	Description: "Current weather for a place.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`),
}

// conversation exercises every message shape: system, user, an assistant
// turn with text and two tool calls, their results, and a new user turn.
func conversation() *model.Request {
	return &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "You are terse."},
			{Role: model.RoleUser, Content: "Weather in Paris and Bogotá?"},
			{Role: model.RoleAssistant, Content: "Checking.", ToolCalls: []model.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"location":"Paris"}`)},
				{ID: "call_2", Name: "get_weather", Arguments: json.RawMessage(`{"location":"Bogotá"}`)},
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Content: "18°C"},
			{Role: model.RoleTool, ToolCallID: "call_2", ToolName: "get_weather", Content: "no data", IsError: true},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_3", Name: "get_weather"}}},
			{Role: model.RoleTool, ToolCallID: "call_3", Content: "{}"},
			{Role: model.RoleUser, Content: "And now?"},
		},
		Tools:     []model.ToolSpec{weatherTool},
		MaxTokens: 256,
	}
}

func newClient(srv *pt.Server, sleeps *pt.Sleeps, mod func(*Config)) *Client {
	cfg := Config{
		BaseURL: srv.URL + "/v1",
		APIKey:  "sk-test",
		KeyEnv:  "OPENAI_API_KEY",
		Model:   "gpt-4.1-mini",
		Retry:   sleeps.Policy(4),
		NewID:   func() string { return "call_generated" },
	}
	if mod != nil {
		mod(&cfg)
	}
	return New(cfg)
}

type deltas struct {
	mu   sync.Mutex
	text strings.Builder
	args map[int]string
	rsn  strings.Builder
	n    int
}

func (d *deltas) fn(x model.Delta) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	d.text.WriteString(x.Text)
	d.rsn.WriteString(x.Reasoning)
	if x.ArgumentsFragment != "" || x.ToolName != "" {
		if d.args == nil {
			d.args = map[int]string{}
		}
		d.args[x.ToolCallIndex] += x.ArgumentsFragment
	}
}

func TestGenerate(t *testing.T) {
	tests := []struct {
		name   string
		reply  pt.Reply
		stream bool
		want   model.Response
	}{
		{
			name:   "stream text with keep-alive comments and a usage chunk after finish",
			reply:  pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_text.sse"), Split: "events"},
			stream: true,
			want: model.Response{Text: "All tests pass.", FinishReason: "stop", Model: "gpt-4.1-mini-2025-04-14",
				Usage: model.Usage{InputTokens: 812, OutputTokens: 5, CacheReadTokens: 768}},
		},
		{
			name:   "stream text delivered a few bytes at a time",
			reply:  pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_text.sse"), Split: "bytes"},
			stream: true,
			want: model.Response{Text: "All tests pass.", FinishReason: "stop", Model: "gpt-4.1-mini-2025-04-14",
				Usage: model.Usage{InputTokens: 812, OutputTokens: 5, CacheReadTokens: 768}},
		},
		{
			name:   "stream text then two parallel tool calls with fragmented arguments",
			reply:  pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_parallel_tool_calls.sse"), Split: "events"},
			stream: true,
			want: model.Response{Text: "I'll check both cities.", FinishReason: "tool_calls", Model: "gpt-4.1-mini-2025-04-14",
				ToolCalls: []model.ToolCall{
					{ID: "call_DdmO9pD3xa9XTPNJ32zg2hcA", Name: "get_weather", Arguments: json.RawMessage(`{"location": "Paris, France"}`)},
					{ID: "call_u3pV8wQmDx0TZXbBvpQ1Zk8n", Name: "get_weather", Arguments: json.RawMessage(`{"location": "Bogotá, Colombia"}`)},
				},
				Usage: model.Usage{InputTokens: 120, OutputTokens: 48}},
		},
		{
			name:   "stream with reasoning_content (DeepSeek)",
			reply:  pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_reasoning.sse"), Split: "events"},
			stream: true,
			want: model.Response{Text: "42", FinishReason: "stop", Model: "deepseek-reasoner",
				Reasoning: []model.ReasoningBlock{{Type: "thinking", Text: "The user wants a number."}},
				Usage:     model.Usage{InputTokens: 13, OutputTokens: 9, ReasoningTokens: 6}},
		},
		{
			name:   "Ollama /v1: parallel calls share index 0, finish stop, no usage",
			reply:  pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_same_index.sse"), Split: "events"},
			stream: true,
			want: model.Response{FinishReason: "tool_calls", Model: "qwen3:8b", UsageEstimated: true,
				ToolCalls: []model.ToolCall{
					{ID: "call_a1b2c3d4", Name: "read_file", Arguments: json.RawMessage(`{"path":"go.mod"}`)},
					{ID: "call_e5f6a7b8", Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go"}`)},
				}},
		},
		{
			name:  "non-streaming tool call",
			reply: pt.Reply{Header: jsonHeader, Body: pt.Load(t, "completion_tool_calls.json")},
			want: model.Response{FinishReason: "tool_calls", Model: "gpt-4.1-mini-2025-04-14",
				ToolCalls: []model.ToolCall{{ID: "call_abc123", Name: "get_current_weather", Arguments: json.RawMessage("{\n\"location\": \"Boston, MA\"\n}")}},
				Usage:     model.Usage{InputTokens: 82, OutputTokens: 17}},
		},
		{
			name:  "non-streaming text",
			reply: pt.Reply{Header: jsonHeader, Body: pt.Load(t, "completion_text.json")},
			want: model.Response{Text: "The image shows a wooden boardwalk extending through a lush green marshland.", FinishReason: "stop",
				Model: "gpt-4.1-mini-2025-04-14", Usage: model.Usage{InputTokens: 1117, OutputTokens: 46, CacheReadTokens: 1024}},
		},
		{
			// Gemini's OpenAI-compatible API: hidden thinking is in
			// total_tokens only (58 + 11 + 262 thinking = 331).
			name:  "non-streaming, thinking tokens only in total_tokens (Gemini)",
			reply: pt.Reply{Header: jsonHeader, Body: pt.Load(t, "completion_gemini_thinking.json")},
			want: model.Response{Text: "The bug is in calc.go: Add subtracts.", FinishReason: "stop", Model: "gemini-2.5-flash",
				Usage: model.Usage{InputTokens: 58, OutputTokens: 273, ReasoningTokens: 262}},
		},
		{
			name:   "stream asked for but the server answered with one JSON completion",
			reply:  pt.Reply{Header: jsonHeader, Body: pt.Load(t, "completion_text.json")},
			stream: true,
			want: model.Response{Text: "The image shows a wooden boardwalk extending through a lush green marshland.", FinishReason: "stop",
				Model: "gpt-4.1-mini-2025-04-14", Usage: model.Usage{InputTokens: 1117, OutputTokens: 46, CacheReadTokens: 1024}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := pt.New(t, validateRequest, errorBody, tt.reply)
			c := newClient(srv, &pt.Sleeps{}, nil)
			var d deltas
			var fn model.StreamFunc
			if tt.stream {
				fn = d.fn
			}
			got, err := c.Generate(t.Context(), conversation(), fn)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.UsageEstimated {
				if got.Usage.InputTokens == 0 {
					t.Errorf("estimated usage is zero")
				}
				tt.want.Usage = got.Usage
			}
			if !reflect.DeepEqual(*got, tt.want) {
				gj, _ := json.MarshalIndent(got, "", " ")
				wj, _ := json.MarshalIndent(tt.want, "", " ")
				t.Errorf("got\n%s\nwant\n%s", gj, wj)
			}
			if !tt.stream {
				return
			}
			if d.text.String() != got.Text {
				t.Errorf("text deltas %q, reply %q", d.text.String(), got.Text)
			}
			for i, tc := range got.ToolCalls {
				if d.args[i] != string(tc.Arguments) {
					t.Errorf("tool call %d: argument deltas %q, reply %s", i, d.args[i], tc.Arguments)
				}
			}
			if len(got.Reasoning) > 0 && d.rsn.String() != got.Reasoning[0].Text {
				t.Errorf("reasoning deltas %q", d.rsn.String())
			}
			var req map[string]any
			_ = json.Unmarshal(srv.Request(0), &req)
			if req["stream"] != true || !reflect.DeepEqual(req["stream_options"], map[string]any{"include_usage": true}) {
				t.Errorf("stream request without stream_options.include_usage: %s", srv.Request(0))
			}
		})
	}
}

func TestRequestShape(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: jsonHeader, Body: pt.Load(t, "completion_text.json")})
	c := newClient(srv, &pt.Sleeps{}, func(c *Config) { c.MaxTokensField = "max_completion_tokens" })
	temp := 0.2
	req := conversation()
	req.Temperature = &temp
	if _, err := c.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-4.1-mini","messages":[` +
		`{"role":"system","content":"You are terse."},` +
		`{"role":"user","content":"Weather in Paris and Bogotá?"},` +
		`{"role":"assistant","content":"Checking.","tool_calls":[` +
		`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Bogotá\"}"}}]},` +
		`{"role":"tool","content":"18°C","tool_call_id":"call_1"},` +
		`{"role":"tool","content":"no data","tool_call_id":"call_2"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","content":"{}","tool_call_id":"call_3"},` +
		`{"role":"user","content":"And now?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather for a place.","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}}],` +
		`"max_completion_tokens":256,"temperature":0.2}` + "\n"
	if got := string(srv.Request(0)); got != want {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
}

// TestValidator makes sure the fake server rejects what the real API
// rejects, so the tests above mean something.
func TestValidator(t *testing.T) {
	bad := map[string]string{
		"tool result without a call":    `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","content":"r","tool_call_id":"c1"}]}`,
		"unanswered tool call":          `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"y"}]}`,
		"arguments as an object":        `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}]},{"role":"tool","content":"r","tool_call_id":"c1"}]}`,
		"stream_options without stream": `{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`,
		"tool without schema":           `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
		"null user content":             `{"model":"m","messages":[{"role":"user","content":null}]}`,
	}
	for name, body := range bad {
		r, _ := http.NewRequest("POST", "http://x/v1/chat/completions", nil)
		r.Header.Set("Authorization", "Bearer sk-test")
		r.Header.Set("Content-Type", "application/json")
		if validateRequest(r, []byte(body)) == "" {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestErrors(t *testing.T) {
	html := pt.Reply{Status: 500, Header: map[string]string{"Content-Type": "text/html"}, Body: pt.Load(t, "error_500.html")}
	tests := []struct {
		name      string
		replies   []pt.Reply
		stream    bool
		mod       func(*Config)
		is        []error
		isNot     []error
		msg       []string
		hits      int
		waits     []time.Duration
		ok        bool
		wantExact string
	}{
		{
			name:    "truncated stream without [DONE]",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_truncated.sse"), Split: "events"}},
			stream:  true, is: []error{model.ErrMalformed}, isNot: []error{model.ErrRetryable},
			msg:  []string{`openai: malformed reply from`, `the stream ended after 2 events without "data: [DONE]" and before any finish_reason`},
			hits: 1,
		},
		{
			name:    "stream stops in the middle of tool arguments",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_mid_argument.sse"), Split: "events"}},
			stream:  true, is: []error{model.ErrMalformed},
			msg:  []string{`stopped in the middle of the arguments of tool call 0 (get_weather): "{\"location\": \"Pa"`},
			hits: 1,
		},
		{
			name:    "invalid JSON in a chunk",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_invalid_json.sse"), Split: "events"}},
			stream:  true, is: []error{model.ErrMalformed},
			msg:  []string{`event 2 is not valid JSON`},
			hits: 1,
		},
		{
			name:    "200 with text/html",
			replies: []pt.Reply{{Header: map[string]string{"Content-Type": "text/html; charset=utf-8"}, Body: []byte("<!doctype html><html><head><title>Sign in</title></head></html>")}},
			stream:  true, is: []error{model.ErrMalformed},
			msg:  []string{`HTTP 200 with content type text/html`, `is the base URL right?`, `HTML page titled "Sign in"`},
			hits: 1,
		},
		{
			name:    "non-streaming body that is not JSON",
			replies: []pt.Reply{{Header: jsonHeader, Body: []byte(`{"id":"x","choices":[{"message":`)}},
			is:      []error{model.ErrMalformed},
			msg:     []string{`not a JSON error`, `unexpected end of JSON input`},
			hits:    1,
		},
		{
			name:    "HTTP 500 with an HTML body, retried until attempts run out",
			replies: []pt.Reply{html},
			stream:  true, is: []error{model.ErrRetryable}, isNot: []error{model.ErrMalformed},
			msg:   []string{`openai: HTTP 500 from`, `(model gpt-4.1-mini): the body is an HTML page titled "500 Internal Server Error", not JSON (gave up after 4 attempts)`},
			hits:  4,
			waits: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second},
		},
		{
			name: "429 with Retry-After seconds, then success",
			replies: []pt.Reply{
				{Status: 429, Header: map[string]string{"Content-Type": "application/json", "Retry-After": "3"}, Body: pt.Load(t, "error_429.json")},
				{Header: sseHeader, Body: pt.Load(t, "stream_text.sse")},
			},
			stream: true, ok: true, hits: 2, waits: []time.Duration{3 * time.Second},
		},
		{
			name: "503 with Retry-After as an HTTP date, then success",
			replies: []pt.Reply{
				{Status: 503, Header: map[string]string{"Retry-After": "Thu, 02 Jan 2025 03:04:15 GMT"}, Body: []byte("upstream connect error")},
				{Header: jsonHeader, Body: pt.Load(t, "completion_text.json")},
			},
			ok: true, hits: 2, waits: []time.Duration{10 * time.Second},
		},
		{
			name:    "429 asking for a wait longer than the limit stops at once",
			replies: []pt.Reply{{Status: 429, Header: map[string]string{"Content-Type": "application/json", "Retry-After": "3600"}, Body: pt.Load(t, "error_429.json")}},
			is:      []error{model.ErrRetryable},
			msg:     []string{`Rate limit reached`, `(rate_limit_exceeded)`, `server asked to wait 1h0m0s`},
			hits:    1,
		},
		{
			name:      "401 is final and says what to check",
			replies:   []pt.Reply{{Status: 401, Header: jsonHeader, Body: pt.Load(t, "error_401.json")}},
			isNot:     []error{model.ErrRetryable},
			hits:      1,
			wantExact: `openai: HTTP 401 from URL/v1/chat/completions (model gpt-4.1-mini): Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys. (invalid_api_key) — check --api-key or OPENAI_API_KEY`,
		},
		{
			name:    "404 unknown model",
			replies: []pt.Reply{{Status: 404, Header: jsonHeader, Body: pt.Load(t, "error_404_model.json")}},
			isNot:   []error{model.ErrRetryable},
			msg:     []string{"HTTP 404", "The model `gpt-9` does not exist", `check the model name "gpt-4.1-mini" and --base-url`},
			hits:    1,
		},
		{
			name:    "error object inside the stream (OpenRouter upstream 502) is retried",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_error_event.sse")}},
			stream:  true, mod: func(c *Config) { c.Retry.MaxAttempts = 2 },
			is:   []error{model.ErrRetryable},
			msg:  []string{"error in the reply", "Provider returned error", "gave up after 2 attempts"},
			hits: 2,
		},
		{
			name: "connection dropped before any delta is retried",
			replies: []pt.Reply{
				{Header: sseHeader, Body: []byte(": keep-alive\n\n"), Abort: true},
				{Header: sseHeader, Body: pt.Load(t, "stream_text.sse")},
			},
			stream: true, ok: true, hits: 2,
		},
		{
			name:    "connection dropped after text was streamed is not retried",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_truncated.sse"), Abort: true}},
			stream:  true, is: []error{model.ErrRetryable}, isNot: []error{model.ErrMalformed},
			msg:  []string{"openai: connection lost while reading the reply from", "unexpected EOF"},
			hits: 1,
		},
		{
			name:    "first-byte timeout is retried, then gives up",
			replies: []pt.Reply{{HangBefore: true}},
			stream:  true, mod: func(c *Config) { c.Timeouts.FirstByte = 20 * time.Millisecond; c.Retry.MaxAttempts = 2 },
			is:   []error{model.ErrTimeout, model.ErrRetryable},
			msg:  []string{"no response from", "within 20ms (first-byte timeout)"},
			hits: 2,
		},
		{
			name:    "idle timeout after text was streamed is not retried",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_truncated.sse"), HangAfter: true}},
			stream:  true, mod: func(c *Config) { c.Timeouts.Idle = 20 * time.Millisecond },
			is:   []error{model.ErrTimeout, model.ErrRetryable},
			msg:  []string{"stalled: no data for 20ms (idle timeout)"},
			hits: 1,
		},
		{
			name:    "total timeout while the body streams ends the call, not retried",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_truncated.sse"), HangAfter: true}},
			stream:  true, mod: func(c *Config) { c.Timeouts.Total = 50 * time.Millisecond; c.Timeouts.Idle = time.Hour },
			is: []error{model.ErrTimeout}, isNot: []error{model.ErrRetryable},
			msg:  []string{"did not finish within 50ms (total timeout)"},
			hits: 1,
		},
		{
			name:    "total timeout counts from the first attempt across retries",
			replies: []pt.Reply{{Status: 503, Body: []byte("busy")}, {HangBefore: true}},
			mod:     func(c *Config) { c.Timeouts.Total = 50 * time.Millisecond },
			is:      []error{model.ErrTimeout}, isNot: []error{model.ErrRetryable},
			msg:   []string{"did not finish within 50ms (total timeout)"},
			hits:  2,
			waits: []time.Duration{250 * time.Millisecond},
		},
		{
			name:    "total timeout ends the call",
			replies: []pt.Reply{{HangBefore: true}},
			mod:     func(c *Config) { c.Timeouts.Total = 30 * time.Millisecond },
			is:      []error{model.ErrTimeout}, isNot: []error{model.ErrRetryable},
			msg:  []string{"did not finish within 30ms (total timeout)"},
			hits: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := pt.New(t, validateRequest, errorBody, tt.replies...)
			sleeps := &pt.Sleeps{}
			c := newClient(srv, sleeps, tt.mod)
			var fn model.StreamFunc
			if tt.stream {
				fn = func(model.Delta) {}
			}
			resp, err := c.Generate(t.Context(), conversation(), fn)
			if tt.ok {
				if err != nil || resp.Text == "" {
					t.Fatalf("got %v, %v", resp, err)
				}
			} else if err == nil {
				t.Fatalf("no error; reply %+v", resp)
			}
			if err != nil {
				t.Log(err)
				if resp != nil {
					t.Errorf("reply %+v returned with error", resp)
				}
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
				if tt.wantExact != "" {
					if got := strings.ReplaceAll(err.Error(), srv.URL, "URL"); got != tt.wantExact {
						t.Errorf("error\n got %s\nwant %s", got, tt.wantExact)
					}
				}
			}
			if got := srv.Hits(); got != tt.hits {
				t.Errorf("%d requests, want %d", got, tt.hits)
			}
			if tt.waits != nil && !reflect.DeepEqual(sleeps.Waits(), tt.waits) {
				t.Errorf("waits %v, want %v", sleeps.Waits(), tt.waits)
			}
		})
	}
}

func TestNoRetryAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Status: 503, Body: []byte("busy"), OnRequest: cancel})
	c := newClient(srv, &pt.Sleeps{}, nil)
	_, err := c.Generate(ctx, conversation(), nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, model.ErrRetryable) {
		t.Fatalf("got %v, want context.Canceled and not retryable", err)
	}
	if srv.Hits() != 1 {
		t.Errorf("%d requests after cancel, want 1", srv.Hits())
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := New(Config{BaseURL: "http://" + addr + "/v1", Model: "m", Retry: (&pt.Sleeps{}).Policy(4)})
	_, err = c.Generate(t.Context(), conversation(), nil)
	if !errors.Is(err, model.ErrRetryable) || !strings.Contains(err.Error(), "cannot reach http://"+addr) {
		t.Fatalf("got %v", err)
	}
	var ne *transport.NetError
	if !errors.As(err, &ne) {
		t.Errorf("not a NetError: %T", err)
	}
}

// TestNoTimeouts: with every limit disabled (no timer is made) calls work,
// and a server that keeps the stream open after [DONE] still does not
// hold the call.
func TestNoTimeouts(t *testing.T) {
	off := func(c *Config) { c.Timeouts = transport.Timeouts{Connect: -1, FirstByte: -1, Idle: -1, Total: -1} }
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_text.sse"), HangAfter: true})
	resp, err := newClient(srv, &pt.Sleeps{}, off).Generate(t.Context(), conversation(), func(model.Delta) {})
	if err != nil || resp.Text != "All tests pass." {
		t.Fatalf("stream: got %+v, %v", resp, err)
	}
	srv = pt.New(t, validateRequest, errorBody, pt.Reply{Header: jsonHeader, Body: pt.Load(t, "completion_text.json")})
	resp, err = newClient(srv, &pt.Sleeps{}, off).Generate(t.Context(), conversation(), nil)
	if err != nil || resp.FinishReason != "stop" {
		t.Fatalf("json: got %+v, %v", resp, err)
	}
}

// TestSequentialCalls: one client, many calls of both kinds (pooled
// buffers, readers and decoders reused), the same replies every time.
func TestSequentialCalls(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_parallel_tool_calls.sse")})
	jsrv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: jsonHeader, Body: pt.Load(t, "completion_tool_calls.json")})
	sc, jc := newClient(srv, &pt.Sleeps{}, nil), newClient(jsrv, &pt.Sleeps{}, nil)
	var first, jfirst *model.Response
	for i := range 20 {
		req := conversation()
		req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: strings.Repeat("more ", i*50)})
		resp, err := sc.Generate(t.Context(), req, func(model.Delta) {})
		if err != nil {
			t.Fatal(err)
		}
		jresp, err := jc.Generate(t.Context(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first, jfirst = resp, jresp
		} else if !reflect.DeepEqual(resp, first) || !reflect.DeepEqual(jresp, jfirst) {
			t.Fatalf("call %d: %+v / %+v, want %+v / %+v", i, resp, jresp, first, jfirst)
		}
		var got struct {
			Messages []model.Message `json:"messages"`
		}
		if err := json.Unmarshal(srv.Request(i), &got); err != nil || len(got.Messages) != len(req.Messages) || got.Messages[len(got.Messages)-1].Content != req.Messages[len(req.Messages)-1].Content {
			t.Fatalf("call %d: request %s (%v)", i, srv.Request(i), err)
		}
	}
}

// TestDoneThenHang: a server that sends [DONE] but keeps the connection
// open must not hold the call.
func TestDoneThenHang(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_text.sse"), HangAfter: true})
	c := newClient(srv, &pt.Sleeps{}, func(c *Config) { c.Timeouts.Idle = time.Hour; c.Timeouts.Total = time.Hour })
	resp, err := c.Generate(t.Context(), conversation(), func(model.Delta) {})
	if err != nil || resp.Text != "All tests pass." {
		t.Fatalf("got %+v, %v", resp, err)
	}
}
