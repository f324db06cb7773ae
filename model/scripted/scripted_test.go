package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentloop/agentloop/model"
)

// userRequest is a request whose messages hold 12 bytes for the usage
// estimate: 8 of content plus a tool call of 2 + 2 bytes.
func userRequest() *model.Request {
	return &model.Request{
		Messages: []model.Message{
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "ab", Arguments: json.RawMessage(`{}`)}}},
			{Role: model.RoleUser, Content: "12345678"},
		},
		Tools: []model.ToolSpec{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
}

func mustParse(t *testing.T, src string) *Script {
	t.Helper()
	s, err := Parse("t.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGenerateStepKinds(t *testing.T) {
	retry := &model.RetryableError{Err: errors.New("slow down"), RetryAfter: 3 * time.Second}
	tests := []struct {
		name     string
		model    *Model
		want     *model.Response // nil when an error is expected
		wantErr  []error         // errors.Is targets
		errText  string
		retryFor time.Duration
	}{
		{
			name:  "text",
			model: Replies(Text("hello world!")),
			want: &model.Response{Text: "hello world!", FinishReason: "stop", Model: "scripted",
				Usage: model.Usage{InputTokens: 3, OutputTokens: 3}, UsageEstimated: true},
		},
		{
			name:  "empty text",
			model: Replies(Text("")),
			want: &model.Response{FinishReason: "stop", Model: "scripted",
				Usage: model.Usage{InputTokens: 3}, UsageEstimated: true},
		},
		{
			name:  "one call",
			model: Replies(Call("read_file", `{"path":"a"}`)),
			want: &model.Response{FinishReason: "tool_calls", Model: "scripted",
				ToolCalls: []model.ToolCall{{ID: "call_1_0", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)}},
				Usage:     model.Usage{InputTokens: 3, OutputTokens: 5}, UsageEstimated: true},
		},
		{
			name: "parallel calls with text, usage and finish reason",
			model: Replies(Calls(Call("a", `{}`), Call("b", `{"x":1}`)).
				WithText("two at once").WithUsage(model.Usage{InputTokens: 7, OutputTokens: 9}).WithFinishReason("length")),
			want: &model.Response{Text: "two at once", FinishReason: "length", Model: "scripted",
				ToolCalls: []model.ToolCall{
					{ID: "call_1_0", Name: "a", Arguments: json.RawMessage(`{}`)},
					{ID: "call_1_1", Name: "b", Arguments: json.RawMessage(`{"x":1}`)},
				},
				Usage: model.Usage{InputTokens: 7, OutputTokens: 9}},
		},
		{
			name:  "explicit id and malformed arguments are kept",
			model: New(mustParse(t, `{"steps":[{"tool_calls":[{"id":"mine","name":"w","raw_arguments":"{\"path\": "}]}]}`)),
			want: &model.Response{FinishReason: "tool_calls", Model: "scripted",
				ToolCalls: []model.ToolCall{{ID: "mine", Name: "w", Arguments: json.RawMessage(`{"path": `)}},
				Usage:     model.Usage{InputTokens: 3, OutputTokens: 2}, UsageEstimated: true},
		},
		{
			name:     "Fail with a retryable error",
			model:    Replies(Fail(retry)),
			wantErr:  []error{model.ErrRetryable, retry},
			errText:  "slow down",
			retryFor: 3 * time.Second,
		},
		{
			name:     "json retryable",
			model:    New(mustParse(t, `{"steps":[{"error":{"kind":"retryable","status":429,"message":"rate limited","retry_after":"2s"}}]}`)),
			wantErr:  []error{model.ErrRetryable},
			errText:  "HTTP 429: rate limited",
			retryFor: 2 * time.Second,
		},
		{
			name:    "json timeout",
			model:   New(mustParse(t, `{"steps":[{"error":{"kind":"timeout","message":"no first token after 30s"}}]}`)),
			wantErr: []error{model.ErrTimeout},
			errText: "no first token after 30s: model call timed out",
		},
		{
			name:    "json malformed",
			model:   New(mustParse(t, `{"steps":[{"error":{"kind":"malformed","message":"bad SSE frame"}}]}`)),
			wantErr: []error{model.ErrMalformed},
			errText: "bad SSE frame: malformed model response",
		},
		{
			name:    "json fatal",
			model:   New(mustParse(t, `{"steps":[{"error":{"kind":"fatal","status":401,"message":"invalid API key"}}]}`)),
			errText: "HTTP 401: invalid API key",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.model.Generate(t.Context(), userRequest(), nil)
			if tt.want != nil {
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if g, w := asJSON(t, resp), asJSON(t, tt.want); g != w {
					t.Errorf("response:\n got %s\nwant %s", g, w)
				}
			} else {
				if err == nil {
					t.Fatalf("Generate = %s, want error %q", asJSON(t, resp), tt.errText)
				}
				if err.Error() != tt.errText {
					t.Errorf("error = %q, want %q", err, tt.errText)
				}
				for _, target := range tt.wantErr {
					if !errors.Is(err, target) {
						t.Errorf("errors.Is(%v, %v) = false", err, target)
					}
				}
				if !isRetryable(tt.wantErr) {
					for _, s := range []error{model.ErrRetryable, model.ErrTimeout, model.ErrMalformed} {
						if !containsErr(tt.wantErr, s) && errors.Is(err, s) {
							t.Errorf("error %q unexpectedly matches %v", err, s)
						}
					}
				}
				var re *model.RetryableError
				if errors.As(err, &re) != (tt.retryFor > 0) || (re != nil && re.RetryAfter != tt.retryFor) {
					t.Errorf("RetryableError = %#v, want RetryAfter %v", re, tt.retryFor)
				}
			}
			if err := tt.model.Err(); err != nil {
				t.Errorf("Err() = %v", err)
			}
		})
	}
}

func isRetryable(errs []error) bool { return containsErr(errs, model.ErrRetryable) }

func containsErr(errs []error, target error) bool {
	for _, e := range errs {
		if e == target {
			return true
		}
	}
	return false
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		// Malformed tool arguments cannot be marshalled: fall back.
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func TestDefaultIDsNumberRequests(t *testing.T) {
	m := Replies(Text("a"), Calls(Call("x", `{}`), Call("y", `{}`)))
	for range 2 {
		if _, err := m.Generate(t.Context(), userRequest(), nil); err != nil {
			t.Fatal(err)
		}
	}
	m2 := Replies(Text("a"), Calls(Call("x", `{}`), Call("y", `{}`)))
	m2.Generate(t.Context(), userRequest(), nil)
	resp, _ := m2.Generate(t.Context(), userRequest(), nil)
	if got := []string{resp.ToolCalls[0].ID, resp.ToolCalls[1].ID}; got[0] != "call_2_0" || got[1] != "call_2_1" {
		t.Errorf("ids = %v, want [call_2_0 call_2_1]", got)
	}
}

func TestStreaming(t *testing.T) {
	type delta = model.Delta
	tests := []struct {
		name   string
		script *Script
		want   []delta
	}{
		{
			name:   "no chunk size: one delta per text and per call",
			script: &Script{Steps: []Step{Call("read_file", `{"path":"a.go"}`).WithText("Reading.")}},
			want: []delta{
				{Text: "Reading."},
				{ToolCallIndex: 0, ToolName: "read_file", ArgumentsFragment: `{"path":"a.go"}`},
			},
		},
		{
			name:   "step chunk size",
			script: &Script{Steps: []Step{Calls(Call("a", `{"k":"vw"}`), Call("b", ``)).WithText("Hello!").WithStreamChunk(4)}},
			want: []delta{
				{Text: "Hell"}, {Text: "o!"},
				{ToolCallIndex: 0, ToolName: "a", ArgumentsFragment: `{"k"`},
				{ToolCallIndex: 0, ArgumentsFragment: `:"vw`},
				{ToolCallIndex: 0, ArgumentsFragment: `"}`},
				{ToolCallIndex: 1, ToolName: "b"},
			},
		},
		{
			name:   "script chunk size; UTF-8 characters are never split",
			script: &Script{StreamChunk: 2, Steps: []Step{Text("aé🙂b")}},
			want:   []delta{{Text: "aé"}, {Text: "🙂"}, {Text: "b"}},
		},
		{
			name:   "step overrides script chunk size",
			script: &Script{StreamChunk: 1, Steps: []Step{Text("abcdef").WithStreamChunk(3)}},
			want:   []delta{{Text: "abc"}, {Text: "def"}},
		},
		{
			name:   "empty text streams nothing",
			script: &Script{StreamChunk: 1, Steps: []Step{Text("")}},
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []delta
			resp, err := New(tt.script).Generate(t.Context(), userRequest(), func(d model.Delta) { got = append(got, d) })
			if err != nil {
				t.Fatal(err)
			}
			if g, w := asJSON(t, got), asJSON(t, tt.want); g != w {
				t.Errorf("deltas:\n got %s\nwant %s", g, w)
			}
			// The deltas add up to the response.
			var text strings.Builder
			args := map[int]string{}
			for _, d := range got {
				if !utf8.ValidString(d.Text) || !utf8.ValidString(d.ArgumentsFragment) {
					t.Errorf("delta %+v splits a UTF-8 character", d)
				}
				text.WriteString(d.Text)
				args[d.ToolCallIndex] += d.ArgumentsFragment
			}
			if text.String() != resp.Text {
				t.Errorf("streamed text %q, response text %q", text.String(), resp.Text)
			}
			for i, tc := range resp.ToolCalls {
				if args[i] != string(tc.Arguments) {
					t.Errorf("streamed arguments of call %d = %q, response has %q", i, args[i], tc.Arguments)
				}
			}
		})
	}
}

func TestStreamingLargeReply(t *testing.T) {
	text := strings.Repeat("héllo wörld ", 500)
	for _, chunk := range []int{1, 2, 3, 7, 64, 10000} {
		var n int
		var b strings.Builder
		resp, err := New(&Script{Steps: []Step{Text(text).WithStreamChunk(chunk)}}).Generate(t.Context(), userRequest(), func(d model.Delta) {
			n++
			// A delta may run past chunk only to finish a character.
			if len(d.Text) > chunk+utf8.UTFMax-1 || !utf8.ValidString(d.Text) {
				t.Fatalf("chunk %d: bad delta %q", chunk, d.Text)
			}
			b.WriteString(d.Text)
		})
		if err != nil {
			t.Fatal(err)
		}
		if b.String() != text || resp.Text != text {
			t.Errorf("chunk %d: streamed text differs from the script", chunk)
		}
		if want := len(text) / (chunk + utf8.UTFMax - 1); n < want {
			t.Errorf("chunk %d: %d deltas, want at least %d", chunk, n, want)
		}
	}
}

func TestExpect(t *testing.T) {
	req := func(tools []string, msgs ...model.Message) *model.Request {
		r := &model.Request{Messages: msgs}
		for _, name := range tools {
			r.Tools = append(r.Tools, model.ToolSpec{Name: name})
		}
		return r
	}
	user := model.Message{Role: model.RoleUser, Content: "fix the tests"}
	tool := model.Message{Role: model.RoleTool, Content: "ok  \texample.com/calc\t0.002s", ToolCallID: "c"}
	tests := []struct {
		name   string
		expect Expect
		req    *model.Request
		want   string // "" when the request matches
	}{
		{"role matches", Expect{LastMessageRole: model.RoleTool}, req(nil, user, tool), ""},
		{"role differs", Expect{LastMessageRole: model.RoleTool}, req(nil, user),
			"script x.json step 1: expected last message role tool, got user"},
		{"role with no messages", Expect{LastMessageRole: model.RoleUser}, req(nil),
			"script x.json step 1: expected last message role user, got no messages"},
		{"contains matches", Expect{LastMessageContains: "ok"}, req(nil, user, tool), ""},
		{"contains differs", Expect{LastMessageContains: "PASS"}, req(nil, user),
			`script x.json step 1: expected last message to contain "PASS", got "fix the tests"`},
		{"contains abbreviates long content", Expect{LastMessageContains: "zzz"}, req(nil, model.Message{Role: model.RoleTool, Content: strings.Repeat("a", 200)}),
			`script x.json step 1: expected last message to contain "zzz", got "` + strings.Repeat("a", 120) + `…"`},
		{"tools offered", Expect{ToolsOffered: []string{"read_file", "list_dir"}}, req([]string{"list_dir", "write_file", "read_file"}, user), ""},
		{"tool missing", Expect{ToolsOffered: []string{"read_file", "edit_file"}}, req([]string{"read_file", "list_dir"}, user),
			"script x.json step 1: expected tool edit_file to be offered, got [read_file, list_dir]"},
		{"message count", Expect{MessageCount: 2}, req(nil, user, tool), ""},
		{"message count differs", Expect{MessageCount: 5}, req(nil, user, tool), "script x.json step 1: expected 5 messages, got 2"},
		{"several problems at once", Expect{LastMessageRole: model.RoleTool, MessageCount: 3, ToolsOffered: []string{"x"}}, req(nil, user),
			"script x.json step 1: expected last message role tool, got user; expected tool x to be offered, got []; expected 3 messages, got 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(&Script{Name: "x.json", Steps: []Step{Text("done").WithExpect(tt.expect), Text("more")}})
			resp, err := m.Generate(t.Context(), tt.req, nil)
			if tt.want == "" {
				if err != nil || resp.Text != "done" {
					t.Fatalf("Generate = %v, %v; want the step's reply", resp, err)
				}
				if err := m.Err(); !errors.Is(err, ErrUnplayed) || errors.Is(err, ErrExpectation) {
					t.Errorf("Err() = %v, want only the unplayed step", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want || !errors.Is(err, ErrExpectation) {
				t.Fatalf("Generate error = %v, want %q matching ErrExpectation", err, tt.want)
			}
			if resp != nil {
				t.Errorf("Generate returned a response with the error: %+v", resp)
			}
			if got := m.Remaining(); got != 1 {
				t.Errorf("Remaining = %d, want 1: a failed expectation still takes its step", got)
			}
			if resp, err := m.Generate(t.Context(), tt.req, nil); err != nil || resp.Text != "more" {
				t.Errorf("next Generate = %v, %v; want the next step", resp, err)
			}
			if err := m.Err(); err == nil || err.Error() != tt.want || !errors.Is(err, ErrExpectation) {
				t.Errorf("Err() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestErrSummary(t *testing.T) {
	five := &Script{Name: "x.json", Steps: []Step{Text("1"), Text("2"), Text("3"), Text("4"), Text("5")}}
	tests := []struct {
		name      string
		model     *Model
		calls     int
		remaining int
		want      string
		is        []error
	}{
		{"all played", New(five), 5, 0, "", nil},
		{"never called", New(five), 0, 5, "script x.json: 5 of 5 steps never played (steps 1-5)", []error{ErrUnplayed}},
		{"two unplayed", New(five), 3, 2, "script x.json: 2 of 5 steps never played (steps 4-5)", []error{ErrUnplayed}},
		{"one unplayed", New(five), 4, 1, "script x.json: 1 of 5 steps never played (step 5)", []error{ErrUnplayed}},
		{"one past the end", New(five), 6, 0, "script x.json: request 6 arrived but the script has 5 steps", []error{ErrPastEnd}},
		{"three past the end", New(five), 8, 0,
			"script x.json: request 6 arrived but the script has 5 steps (3 requests past the end in all)", []error{ErrPastEnd}},
		{"no steps", Replies(), 1, 0, "script Replies: request 1 arrived but the script has 0 steps", []error{ErrPastEnd}},
		{"unnamed", New(&Script{Steps: []Step{Text("a")}}), 0, 1, "script (unnamed): 1 of 1 steps never played (step 1)", []error{ErrUnplayed}},
		{"compact models report too", NewCompact(five), 7, 0,
			"script x.json: request 6 arrived but the script has 5 steps (2 requests past the end in all)", []error{ErrPastEnd}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.calls {
				resp, err := tt.model.Generate(t.Context(), userRequest(), nil)
				played := min(i+1, len(tt.model.script.Steps))
				if i < len(tt.model.script.Steps) {
					if err != nil || resp.Text != fmt.Sprint(played) {
						t.Fatalf("call %d: Generate = %v, %v", i+1, resp, err)
					}
					continue
				}
				want := fmt.Sprintf("script %s: request %d arrived but the script has %d steps", tt.model.name(), i+1, len(tt.model.script.Steps))
				if err == nil || err.Error() != want || !errors.Is(err, ErrPastEnd) || resp != nil {
					t.Fatalf("call %d: Generate = %v, %v; want error %q", i+1, resp, err, want)
				}
			}
			if got := tt.model.Remaining(); got != tt.remaining {
				t.Errorf("Remaining = %d, want %d", got, tt.remaining)
			}
			err := tt.model.Err()
			if tt.want == "" {
				if err != nil {
					t.Errorf("Err() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("Err() = %v, want %q", err, tt.want)
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("Err() does not match %v", target)
				}
			}
		})
	}
}

func TestErrJoinsEverything(t *testing.T) {
	m := New(&Script{Name: "x.json", Steps: []Step{
		Text("a").WithExpect(Expect{MessageCount: 1}),
		Text("b").WithExpect(Expect{LastMessageRole: model.RoleTool}),
	}})
	m.Generate(t.Context(), userRequest(), nil)
	err := m.Err()
	want := "script x.json step 1: expected 1 messages, got 2\nscript x.json: 1 of 2 steps never played (step 2)"
	if err == nil || err.Error() != want || !errors.Is(err, ErrExpectation) || !errors.Is(err, ErrUnplayed) || errors.Is(err, ErrPastEnd) {
		t.Errorf("Err() = %v, want %q", err, want)
	}
}

func TestRepeat(t *testing.T) {
	s := &Script{Name: "loop.json", Repeat: true, Steps: []Step{
		Call("read_file", `{"path":"a"}`),
		Text("done").WithExpect(Expect{LastMessageRole: model.RoleTool}),
	}}
	m := New(s)
	if got := m.Remaining(); got != 2 {
		t.Errorf("Remaining before any request = %d, want 2", got)
	}
	toolReq := &model.Request{Messages: []model.Message{{Role: model.RoleTool, Content: "x"}}}
	var ids []string
	for pass := 1; pass <= 3; pass++ {
		resp, err := m.Generate(t.Context(), userRequest(), nil)
		if err != nil {
			t.Fatalf("pass %d step 1: %v", pass, err)
		}
		ids = append(ids, resp.ToolCalls[0].ID)
		if got := m.Remaining(); got != 1 {
			t.Errorf("pass %d: Remaining mid-pass = %d, want 1", pass, got)
		}
		if resp, err = m.Generate(t.Context(), toolReq, nil); err != nil || resp.Text != "done" {
			t.Fatalf("pass %d step 2: %v, %v", pass, resp, err)
		}
		if got := m.Remaining(); got != 0 {
			t.Errorf("pass %d: Remaining at end of pass = %d, want 0", pass, got)
		}
	}
	if want := "call_1_0 call_3_0 call_5_0"; strings.Join(ids, " ") != want {
		t.Errorf("ids across passes = %v, want %s (unique)", ids, want)
	}
	if err := m.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}

	// A failed expectation names the pass.
	m.Generate(t.Context(), userRequest(), nil)
	_, err := m.Generate(t.Context(), userRequest(), nil)
	want := "script loop.json step 2 (pass 4): expected last message role tool, got user"
	if err == nil || err.Error() != want {
		t.Errorf("Generate error = %v, want %q", err, want)
	}
	if err := m.Err(); err == nil || err.Error() != want {
		t.Errorf("Err() = %v, want %q", err, want)
	}
	if got := len(m.Requests()); got != 8 {
		t.Errorf("recorded %d requests, want 8", got)
	}
}

func TestRepeatKeepsBoundedFailures(t *testing.T) {
	m := NewCompact(&Script{Name: "r", Repeat: true, Steps: []Step{Text("a").WithExpect(Expect{MessageCount: 1})}})
	for range maxFailures + 5 {
		if _, err := m.Generate(t.Context(), userRequest(), nil); !errors.Is(err, ErrExpectation) {
			t.Fatalf("Generate error = %v, want ErrExpectation", err)
		}
	}
	err := m.Err()
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxFailures+1 || lines[maxFailures] != "script r: 5 more expectation failures not shown" {
		t.Errorf("Err() has %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestConcurrentUse(t *testing.T) {
	const goroutines, perG = 8, 25
	steps := make([]Step, goroutines*perG)
	for i := range steps {
		steps[i] = Text(fmt.Sprint(i))
	}
	m := New(&Script{Name: "many", Steps: steps})
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: fmt.Sprintf("g%d-%d", g, i)}}}
				resp, err := m.Generate(t.Context(), req, func(model.Delta) {})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[resp.Text] = true
				mu.Unlock()
				_ = m.Remaining()
				_ = m.Requests()
			}
		})
	}
	wg.Wait()
	if len(seen) != len(steps) {
		t.Errorf("%d distinct steps played, want %d", len(seen), len(steps))
	}
	if got := len(m.Requests()); got != len(steps) {
		t.Errorf("recorded %d requests, want %d", got, len(steps))
	}
	if m.Remaining() != 0 || m.Err() != nil {
		t.Errorf("Remaining = %d, Err = %v", m.Remaining(), m.Err())
	}
}

func TestSharedScriptConcurrentModels(t *testing.T) {
	s := &Script{Name: "shared", Repeat: true, Steps: []Step{Call("x", `{"a":1}`), Text("y")}}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			m := NewCompact(s)
			for range 10 {
				resp, err := m.Generate(t.Context(), userRequest(), nil)
				if err != nil {
					t.Error(err)
					return
				}
				for _, tc := range resp.ToolCalls {
					tc.Arguments[0] = 'X' // must not touch the shared script
				}
			}
		})
	}
	wg.Wait()
	if got := string(s.Steps[0].ToolCalls[0].Arguments); got != `{"a":1}` {
		t.Errorf("shared script arguments became %s", got)
	}
}

func TestDelayAndCancellation(t *testing.T) {
	t.Run("delay then reply", func(t *testing.T) {
		m := Replies(Text("late").WithDelay(time.Millisecond))
		if resp, err := m.Generate(t.Context(), userRequest(), nil); err != nil || resp.Text != "late" {
			t.Fatalf("Generate = %v, %v", resp, err)
		}
	})
	t.Run("delay then error", func(t *testing.T) {
		m := Replies(Fail(fmt.Errorf("gateway: %w", model.ErrTimeout)).WithDelay(time.Millisecond))
		if _, err := m.Generate(t.Context(), userRequest(), nil); !errors.Is(err, model.ErrTimeout) {
			t.Fatalf("Generate error = %v, want ErrTimeout", err)
		}
	})
	t.Run("cancelled during the delay", func(t *testing.T) {
		m := Replies(Text("never").WithDelay(time.Hour), Text("next"))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := m.Generate(ctx, userRequest(), nil)
			done <- err
		}()
		// Wait until the request has taken its step, then cancel. The test
		// hangs (and times out) if the delay ignores cancellation.
		for m.Remaining() != 1 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Generate error = %v, want context.Canceled", err)
		}
		if resp, err := m.Generate(t.Context(), userRequest(), nil); err != nil || resp.Text != "next" {
			t.Errorf("after cancellation Generate = %v, %v; want the next step", resp, err)
		}
	})
	t.Run("deadline during the delay", func(t *testing.T) {
		m := Replies(Text("never").WithDelay(time.Hour))
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		if _, err := m.Generate(ctx, userRequest(), nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Generate error = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("already cancelled takes no step", func(t *testing.T) {
		m := Replies(Text("a"))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := m.Generate(ctx, userRequest(), nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Generate error = %v, want context.Canceled", err)
		}
		if m.Remaining() != 1 || len(m.Requests()) != 0 {
			t.Errorf("Remaining = %d, %d requests recorded; want 1 and 0", m.Remaining(), len(m.Requests()))
		}
	})
	t.Run("cancelled while streaming", func(t *testing.T) {
		m := Replies(Text("abcdefgh").WithStreamChunk(2))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var deltas int
		_, err := m.Generate(ctx, userRequest(), func(model.Delta) { deltas++; cancel() })
		if !errors.Is(err, context.Canceled) || deltas != 1 {
			t.Fatalf("Generate error = %v after %d deltas, want context.Canceled after 1", err, deltas)
		}
	})
}

func TestSkip(t *testing.T) {
	tests := []struct {
		name      string
		script    *Script
		skip      int
		wantText  string // "" when the next request should be past the end
		wantID    string
		remaining int // after the next request
	}{
		{"resume mid-script", &Script{Name: "s", Steps: []Step{Text("1"), Text("2"), Call("x", `{}`), Text("4")}}, 2, "", "call_3_0", 1},
		{"nothing to skip", &Script{Name: "s", Steps: []Step{Text("1"), Text("2")}}, 0, "1", "", 1},
		{"negative is ignored", &Script{Name: "s", Steps: []Step{Text("1"), Text("2")}}, -3, "1", "", 1},
		{"repeating script wraps", &Script{Name: "s", Repeat: true, Steps: []Step{Text("1"), Text("2")}}, 5, "2", "", 0},
		{"skip to the end", &Script{Name: "s", Steps: []Step{Text("1")}}, 1, "", "", 0},
		{"skip past the end", &Script{Name: "s", Steps: []Step{Text("1")}}, 3, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.script)
			m.Skip(tt.skip)
			resp, err := m.Generate(t.Context(), userRequest(), nil)
			switch {
			case tt.wantID != "":
				if err != nil || resp.ToolCalls[0].ID != tt.wantID {
					t.Fatalf("Generate = %v, %v; want call %s", resp, err, tt.wantID)
				}
			case tt.wantText != "":
				if err != nil || resp.Text != tt.wantText {
					t.Fatalf("Generate = %v, %v; want %q", resp, err, tt.wantText)
				}
			default:
				if !errors.Is(err, ErrPastEnd) {
					t.Fatalf("Generate error = %v, want ErrPastEnd", err)
				}
			}
			if got := m.Remaining(); got != tt.remaining {
				t.Errorf("Remaining = %d, want %d", got, tt.remaining)
			}
			if got := len(m.Requests()); got != 1 {
				t.Errorf("%d requests recorded, want 1 (skipped steps record nothing)", got)
			}
			if tt.wantText == "" && tt.wantID == "" {
				want := fmt.Sprintf("script s: request %d arrived but the script has %d steps", tt.skip+1, len(tt.script.Steps))
				if err := m.Err(); err == nil || err.Error() != want {
					t.Errorf("Err() = %v, want %q", err, want)
				}
			}
		})
	}
}

func TestRequestsAreDeepCopies(t *testing.T) {
	m := Replies(Text("a"), Text("b"))
	temp := 0.5
	req := &model.Request{
		Model: "m",
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "hi"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}},
				Reasoning: []model.ReasoningBlock{{Type: "thinking", Text: "hmm"}}},
		},
		Tools:       []model.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Temperature: &temp,
	}
	before := asJSON(t, req)
	m.Generate(t.Context(), req, nil)
	// The caller reuses and mutates its request, as a loop appending to
	// its history does.
	req.Messages[0].Content = "changed"
	req.Messages[1].ToolCalls[0].Arguments[2] = 'X'
	req.Messages[1].Reasoning[0].Text = "changed"
	req.Tools[0].Parameters[2] = 'X'
	temp = 9
	req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, Content: "r"})
	m.Generate(t.Context(), req, nil)

	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests recorded, want 2", len(reqs))
	}
	if got := asJSON(t, reqs[0]); got != before {
		t.Errorf("first request changed after the fact:\n got %s\nwant %s", got, before)
	}
	if len(reqs[1].Messages) != 3 || reqs[1].Messages[0].Content != "changed" {
		t.Errorf("second request = %s", asJSON(t, reqs[1]))
	}
	// Mutating what Requests returned does not change the record.
	reqs[0].Messages[0].Content = "mutated"
	reqs[0].Messages[1].ToolCalls[0].Arguments[2] = 'Y'
	if got := asJSON(t, m.Requests()[0]); got != before {
		t.Errorf("record changed through Requests():\n got %s\nwant %s", got, before)
	}
}

func TestCompact(t *testing.T) {
	s := &Script{Name: "c", Steps: []Step{Text("a")}}
	m := NewCompact(s)
	if _, err := m.Generate(t.Context(), userRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if got := m.Requests(); got != nil {
		t.Errorf("NewCompact recorded %d requests", len(got))
	}
	if m.Remaining() != 0 || m.Err() != nil {
		t.Errorf("Remaining = %d, Err = %v", m.Remaining(), m.Err())
	}
	if allocs := testing.AllocsPerRun(100, func() { sink = NewCompact(s) }); allocs > 1 {
		t.Errorf("NewCompact allocates %v times, want at most 1", allocs)
	}
}

var sink *Model

func TestNilRequest(t *testing.T) {
	m := Replies(Text("a").WithExpect(Expect{LastMessageRole: model.RoleUser}))
	_, err := m.Generate(t.Context(), nil, nil)
	if want := "script Replies step 1: expected last message role user, got no messages"; err == nil || err.Error() != want {
		t.Errorf("Generate(nil request) error = %v, want %q", err, want)
	}
}

func TestHelpersDoNotAlias(t *testing.T) {
	base := Call("a", `{}`)
	withText := base.WithText("t").WithUsage(model.Usage{InputTokens: 1}).WithDelay(time.Second).WithFinishReason("stop").WithStreamChunk(3).WithExpect(Expect{MessageCount: 2})
	if base.Text != "" || base.Usage != nil || base.Delay != 0 || base.FinishReason != "" || base.StreamChunk != 0 || base.Expect != nil {
		t.Errorf("With… modified the receiver: %+v", base)
	}
	if withText.Text != "t" || withText.Usage.InputTokens != 1 || withText.Delay != time.Second || withText.FinishReason != "stop" ||
		withText.StreamChunk != 3 || withText.Expect.MessageCount != 2 || len(withText.ToolCalls) != 1 {
		t.Errorf("With… chain = %+v", withText)
	}
}

func BenchmarkGenerateCompact(b *testing.B) {
	s := &Script{Name: "bench", Repeat: true, Steps: []Step{Call("read_file", `{"path":"a.go"}`), Text("done")}}
	models := make([]*Model, 10000)
	for i := range models {
		models[i] = NewCompact(s)
	}
	req := userRequest()
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := models[i%len(models)].Generate(ctx, req, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
