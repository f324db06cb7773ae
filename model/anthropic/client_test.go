package anthropic

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/model"
	pt "github.com/agentloop/agentloop/model/internal/providertest"
)

var weatherTool = model.ToolSpec{
	Name:        "get_weather",
	Description: "Get the current weather in a given location",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}`),
}

var signed = []model.ReasoningBlock{
	{Type: "thinking", Text: "Two places, two calls.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrk"},
	{Type: "redacted_thinking", Data: "EmwKAhgBEgy3va3pzix/LafPsn4a"},
}

// conversation has two system messages, an assistant turn with thinking,
// text and two tool calls, two results (one an error) followed by user
// text, which must all merge into one user turn.
func conversation() *model.Request {
	return &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "You are a weather bot."},
			{Role: model.RoleSystem, Content: "Use celsius."},
			{Role: model.RoleUser, Content: "Weather in SF and Paris?"},
			{Role: model.RoleAssistant, Content: "Checking both.", Reasoning: signed, ToolCalls: []model.ToolCall{
				{ID: "toolu_01", Name: "get_weather", Arguments: json.RawMessage(`{"location":"San Francisco, CA"}`)},
				{ID: "toolu_02", Name: "get_weather", Arguments: json.RawMessage(`{"location":"Paris"}`)},
			}},
			{Role: model.RoleTool, ToolCallID: "toolu_01", ToolName: "get_weather", Content: "15°C"},
			{Role: model.RoleTool, ToolCallID: "toolu_02", ToolName: "get_weather", Content: "service down", IsError: true},
			{Role: model.RoleUser, Content: "Also, be quick."},
		},
		Tools: []model.ToolSpec{weatherTool},
	}
}

// toolTurn ends with the results of the assistant's calls, as in the
// middle of an agent loop.
func toolTurn() *model.Request {
	req := conversation()
	req.Messages = req.Messages[:len(req.Messages)-1]
	return req
}

func newClient(srv *pt.Server, sleeps *pt.Sleeps, mod func(*Config)) *Client {
	cfg := Config{BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-sonnet-4-5", Retry: sleeps.Policy(4)}
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
			name:   "text stream with ping and cache reads",
			reply:  pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_text.sse"), Split: "events"},
			stream: true,
			want: model.Response{Text: "Hello!", FinishReason: "stop", Model: "claude-sonnet-4-5-20250929",
				Usage: model.Usage{InputTokens: 25 + 2048, OutputTokens: 15, CacheReadTokens: 2048}},
		},
		{
			name:   "text then two tool_use blocks with input_json_delta, a few bytes at a time",
			reply:  pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_tool_use.sse"), Split: "bytes"},
			stream: true,
			want: model.Response{Text: "Okay, let's check the weather for San Francisco and Paris:", FinishReason: "tool_calls", Model: "claude-sonnet-4-5-20250929",
				ToolCalls: []model.ToolCall{
					{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: json.RawMessage(`{"location": "San Francisco, CA", "unit": "fahrenheit"}`)},
					{ID: "toolu_01CdWhCNpXgKHcSvbV2qH9aN", Name: "get_weather", Arguments: json.RawMessage(`{"location": "Paris, France"}`)},
				},
				Usage: model.Usage{InputTokens: 472 + 1200, OutputTokens: 89, CacheWriteTokens: 1200}},
		},
		{
			name:   "thinking with signature_delta and a redacted block",
			reply:  pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_thinking.sse"), Split: "events"},
			stream: true,
			want: model.Response{Text: "The greatest common divisor of 1071 and 462 is **21**.", FinishReason: "stop", Model: "claude-sonnet-4-5-20250929",
				Reasoning: []model.ReasoningBlock{
					{Type: "thinking", Text: "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147\n462 = 3 × 147 + 21\n147 = 7 × 21 + 0\n\nSo GCD is 21.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
					{Type: "redacted_thinking", Data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
				},
				Usage: model.Usage{InputTokens: 41, OutputTokens: 145}},
		},
		{
			name:  "non-streaming tool use with thinking",
			reply: pt.Reply{Header: jsonHeader, Body: pt.Load(t, "message_tool_use.json")},
			want: model.Response{Text: "I'll check the current weather in San Francisco for you.", FinishReason: "tool_calls", Model: "claude-sonnet-4-5-20250929",
				Reasoning: []model.ReasoningBlock{{Type: "thinking", Text: "The user asks about the weather; call the tool.", Signature: "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL"}},
				ToolCalls: []model.ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: json.RawMessage(`{"location": "San Francisco, CA", "unit": "celsius"}`)}},
				Usage:     model.Usage{InputTokens: 2095 + 1800, OutputTokens: 503, CacheReadTokens: 1800}},
		},
		{
			name:  "non-streaming max_tokens",
			reply: pt.Reply{Header: jsonHeader, Body: pt.Load(t, "message_text.json")},
			want: model.Response{Text: "Hi! My name is Claude.", FinishReason: "length", Model: "claude-sonnet-4-5-20250929",
				Usage: model.Usage{InputTokens: 2095, OutputTokens: 503}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := pt.New(t, validateRequest, errorBody, tt.reply)
			c := newClient(srv, &pt.Sleeps{}, nil)
			var text, rsn strings.Builder
			args := map[int]string{}
			names := map[int]string{}
			var fn model.StreamFunc
			if tt.stream {
				fn = func(d model.Delta) {
					text.WriteString(d.Text)
					rsn.WriteString(d.Reasoning)
					args[d.ToolCallIndex] += d.ArgumentsFragment
					if d.ToolName != "" {
						names[d.ToolCallIndex] = d.ToolName
					}
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
			if !tt.stream {
				return
			}
			if text.String() != got.Text {
				t.Errorf("text deltas %q", text.String())
			}
			for i, tc := range got.ToolCalls {
				if args[i] != string(tc.Arguments) || names[i] != tc.Name {
					t.Errorf("call %d: deltas %q %q", i, names[i], args[i])
				}
			}
			if len(got.Reasoning) > 0 && rsn.String() != got.Reasoning[0].Text {
				t.Errorf("reasoning deltas %q", rsn.String())
			}
		})
	}
}

func TestRequestShape(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: jsonHeader, Body: pt.Load(t, "message_text.json")})
	c := newClient(srv, &pt.Sleeps{}, nil)
	temp := 0.3
	req := conversation()
	req.Temperature = &temp
	if _, err := c.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-sonnet-4-5","max_tokens":4096,"system":"You are a weather bot.\n\nUse celsius.","messages":[` +
		`{"role":"user","content":[{"type":"text","text":"Weather in SF and Paris?"}]},` +
		`{"role":"assistant","content":[` +
		`{"type":"thinking","thinking":"Two places, two calls.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrk"},` +
		`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"},` +
		`{"type":"text","text":"Checking both."},` +
		`{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"location":"San Francisco, CA"}},` +
		`{"type":"tool_use","id":"toolu_02","name":"get_weather","input":{"location":"Paris"}}]},` +
		`{"role":"user","content":[` +
		`{"type":"tool_result","tool_use_id":"toolu_01","content":"15°C"},` +
		`{"type":"tool_result","tool_use_id":"toolu_02","content":"service down","is_error":true},` +
		`{"type":"text","text":"Also, be quick."}]}],` +
		`"tools":[{"name":"get_weather","description":"Get the current weather in a given location","input_schema":{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}}],` +
		`"temperature":0.3}` + "\n"
	if got := string(srv.Request(0)); got != want {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
}

// TestThinkingTurn sends a tool-result turn with thinking enabled: the API
// insists the assistant turn starts with its signed thinking block.
func TestThinkingTurn(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: sseHeader, Body: pt.Load(t, "stream_thinking.sse")})
	c := newClient(srv, &pt.Sleeps{}, func(c *Config) { c.ThinkingBudget = 2048; c.MaxTokens = 1024 })
	req := toolTurn()
	temp := 0.5
	req.Temperature = &temp // must be dropped: thinking forbids it
	got, err := c.Generate(t.Context(), req, func(model.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Reasoning) != 2 || got.Reasoning[0].Signature == "" {
		t.Errorf("reasoning %+v", got.Reasoning)
	}
	var sent struct {
		MaxTokens int `json:"max_tokens"`
		Thinking  struct {
			BudgetTokens int `json:"budget_tokens"`
		}
		Stream bool
	}
	_ = json.Unmarshal(srv.Request(0), &sent)
	if sent.MaxTokens != 3072 || sent.Thinking.BudgetTokens != 2048 || !sent.Stream {
		t.Errorf("sent %+v", sent)
	}
}

func TestValidator(t *testing.T) {
	bad := map[string]string{
		"system role in messages":    `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":[{"type":"text","text":"x"}]}]}`,
		"missing max_tokens":         `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		"tool_use unanswered":        `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"text","text":"y"}]}]}`,
		"text before tool_result":    `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"text","text":"y"},{"type":"tool_result","tool_use_id":"t1"}]}]}`,
		"empty text block":           `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`,
		"thinking without signature": `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"t"}]}]}`,
	}
	for name, body := range bad {
		r, _ := http.NewRequest("POST", "http://x/v1/messages", nil)
		r.Header.Set("X-Api-Key", "sk-ant-test")
		r.Header.Set("Anthropic-Version", "2023-06-01")
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
		exact     string
		hits      int
		waits     []time.Duration
		ok        bool
	}{
		{
			name:    "truncated stream without message_stop",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_truncated.sse"), Split: "events"}},
			stream:  true, is: []error{model.ErrMalformed},
			msg:  []string{"anthropic: malformed reply from", "the stream ended after 5 events without message_stop"},
			hits: 1,
		},
		{
			name:    "stream stops in the middle of tool input",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_mid_input.sse"), Split: "events"}},
			stream:  true, is: []error{model.ErrMalformed},
			msg:  []string{`stopped in the middle of the input of tool call 0 (get_weather): "{\"location\": \"San Francisc"`},
			hits: 1,
		},
		{
			name:    "invalid JSON in an event",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_invalid_json.sse")}},
			stream:  true, is: []error{model.ErrMalformed},
			msg:  []string{"event 2 is not valid JSON"},
			hits: 1,
		},
		{
			name:    "200 with text/html",
			replies: []pt.Reply{{Header: map[string]string{"Content-Type": "text/html"}, Body: pt.Load(t, "error_500.html")}},
			stream:  true, is: []error{model.ErrMalformed},
			msg:  []string{"content type text/html"},
			hits: 1,
		},
		{
			name:    "overloaded error event before any delta is retried",
			replies: []pt.Reply{{Header: sseHeader, Body: pt.Load(t, "stream_overloaded.sse")}, {Header: sseHeader, Body: pt.Load(t, "stream_text.sse")}},
			stream:  true, ok: true, hits: 2, waits: []time.Duration{250 * time.Millisecond},
		},
		{
			name:    "HTTP 529 overloaded until attempts run out",
			replies: []pt.Reply{{Status: 529, Header: jsonHeader, Body: pt.Load(t, "error_529.json")}},
			stream:  true, mod: func(c *Config) { c.Retry.MaxAttempts = 2 },
			is:   []error{model.ErrRetryable},
			msg:  []string{"HTTP 529", "Overloaded (overloaded_error) (gave up after 2 attempts)"},
			hits: 2,
		},
		{
			name:    "HTTP 500 with an HTML body",
			replies: []pt.Reply{{Status: 500, Header: map[string]string{"Content-Type": "text/html"}, Body: pt.Load(t, "error_500.html")}},
			is:      []error{model.ErrRetryable},
			msg:     []string{`HTML page titled "500 Internal Server Error"`, "gave up after 4 attempts"},
			hits:    4,
		},
		{
			name: "429 with Retry-After then success",
			replies: []pt.Reply{
				{Status: 429, Header: map[string]string{"Content-Type": "application/json", "Retry-After": "7"}, Body: []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)},
				{Header: jsonHeader, Body: pt.Load(t, "message_text.json")},
			},
			ok: true, hits: 2, waits: []time.Duration{7 * time.Second},
		},
		{
			name:    "401",
			replies: []pt.Reply{{Status: 401, Header: jsonHeader, Body: pt.Load(t, "error_401.json")}},
			isNot:   []error{model.ErrRetryable},
			exact:   "anthropic: HTTP 401 from URL/v1/messages (model claude-sonnet-4-5): invalid x-api-key (authentication_error) — check --api-key or ANTHROPIC_API_KEY",
			hits:    1,
		},
		{
			name:    "400 names the API's own complaint",
			replies: []pt.Reply{{Status: 400, Header: jsonHeader, Body: pt.Load(t, "error_400.json")}},
			isNot:   []error{model.ErrRetryable},
			msg:     []string{"HTTP 400", "Each `tool_use` block must have a corresponding `tool_result` block", "(invalid_request_error)"},
			hits:    1,
		},
		{
			name:    "first-byte timeout",
			replies: []pt.Reply{{HangBefore: true}},
			stream:  true, mod: func(c *Config) { c.Timeouts.FirstByte = 20 * time.Millisecond; c.Retry.MaxAttempts = 1 },
			is:   []error{model.ErrTimeout, model.ErrRetryable},
			msg:  []string{"(first-byte timeout)", "gave up after 1 attempt)"},
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
				if tt.exact != "" {
					if got := strings.ReplaceAll(err.Error(), srv.URL, "URL"); got != tt.exact {
						t.Errorf("error\n got %s\nwant %s", got, tt.exact)
					}
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
