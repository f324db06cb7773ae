package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Thinking tokens a Gemini-style OpenAI-compatible server reports only in
// total_tokens count as output — in the session's tokens (what the token
// budget checks), its usage and its cost.
func TestHiddenThinkingTokensAreBudgeted(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		calls++
		w.Header().Set("Content-Type", "text/event-stream")
		// 58 prompt + 11 completion + 262 hidden thinking = 331.
		if calls == 2 {
			fmt.Fprint(w, `data: {"choices":[{"delta":{"content":"Nothing here needs fixing.","role":"assistant"},"finish_reason":"stop","index":0}],"created":1748437200,"id":"g2","model":"gemini-2.5-flash","object":"chat.completion.chunk","usage":{"completion_tokens":11,"prompt_tokens":58,"total_tokens":331}}`+"\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		fmt.Fprint(w, `data: {"choices":[{"delta":{"content":"Let me look at calc.go.","role":"assistant"},"index":0}],"created":1748437200,"id":"g1","model":"gemini-2.5-flash","object":"chat.completion.chunk"}`+"\n\n")
		fmt.Fprint(w, `data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"path\":\".\"}","name":"list_dir"},"id":"call_1","index":0,"type":"function"}]},"finish_reason":"tool_calls","index":0}],"created":1748437200,"id":"g1","model":"gemini-2.5-flash","object":"chat.completion.chunk","usage":{"completion_tokens":11,"prompt_tokens":58,"total_tokens":331}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=k")
	_, errOut, code := c.run("", "run", "--dir", t.TempDir(), "--yes", "--model", "openai/gemini-2.5-flash", "--base-url", srv.URL+"/v1", "look around")
	if code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	out, _, _ := c.run("", "sessions", "list", "--json")
	var list []struct {
		ID      string
		Tokens  int
		CostUSD float64 `json:"cost_usd"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
		t.Fatalf("list: %v %s", err, out)
	}
	// Two calls of 331 tokens; without the thinking it would say 138.
	if calls != 2 || list[0].Tokens != 662 {
		t.Fatalf("%d calls, %d tokens", calls, list[0].Tokens)
	}
	out, _, _ = c.run("", "sessions", "show", "--json", list[0].ID)
	var show struct {
		Usage struct {
			Output    int `json:"output_tokens"`
			Reasoning int `json:"reasoning_tokens"`
		}
		CostUSD float64 `json:"cost_usd"`
	}
	if err := json.Unmarshal([]byte(out), &show); err != nil {
		t.Fatal(err)
	}
	if show.Usage.Output != 546 || show.Usage.Reasoning != 524 {
		t.Fatalf("usage: %+v", show.Usage)
	}
	// Priced as output (gemini-2.5-flash: $0.30 in, $2.50 out per million):
	// 116 in, 546 out.
	if want := (116*0.30 + 546*2.50) / 1e6; show.CostUSD < want*0.999 || show.CostUSD > want*1.001 {
		t.Fatalf("cost %v, want %v", show.CostUSD, want)
	}
}

// --thinking from the command line reaches the provider's wire as its own
// parameter; a value it cannot take is refused before anything starts.
func TestThinkingFlag(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"stop here"}}`))
	}))
	defer srv.Close()
	c := newCLI(t)
	c.env = append(c.env, "ANTHROPIC_API_KEY=k")
	c.run("", "run", "--dir", t.TempDir(), "--yes", "--model", "anthropic/claude-sonnet-4-5", "--base-url", srv.URL, "--thinking", "high", "look around")
	var req struct {
		Thinking struct {
			Type   string `json:"type"`
			Budget int    `json:"budget_tokens"`
		} `json:"thinking"`
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Thinking.Type != "enabled" || req.Thinking.Budget != 24576 || req.MaxTokens <= 24576 {
		t.Fatalf("request: %v %s", err, body)
	}
	if _, stderr, code := c.run("", "run", "--dir", t.TempDir(), "--model", "anthropic/claude-sonnet-4-5", "--thinking", "a lot", "x"); code != exitUsage && code != 1 || !strings.Contains(stderr, "use low, medium, high") {
		t.Fatalf("bad --thinking: %d %s", code, stderr)
	}
}

// Reasoning state goes back on the next turn of a tool loop, through the
// real run (the reply recorded, the conversation rebuilt from the log):
// DeepSeek's reasoning_content with the assistant message, Gemini's thought
// signature (extra_content) with its tool call.
func TestReasoningStateGoesBack(t *testing.T) {
	for _, tt := range []struct {
		name, first string
		check       func(msg map[string]any) error
	}{
		{"deepseek reasoning_content",
			`{"id":"d1","object":"chat.completion","model":"deepseek-chat","choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning_content":"I should list the files first.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"list_dir","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
			func(msg map[string]any) error {
				if msg["reasoning_content"] != "I should list the files first." {
					return fmt.Errorf("reasoning_content %v", msg["reasoning_content"])
				}
				return nil
			}},
		{"gemini thought signature",
			`{"id":"g1","object":"chat.completion","model":"gemini-3-pro-preview","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"list_dir","arguments":"{}"},"extra_content":{"google":{"thought_signature":"CpwBAdHtim9="}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
			func(msg map[string]any) error {
				calls, _ := msg["tool_calls"].([]any)
				if len(calls) != 1 {
					return fmt.Errorf("tool_calls %v", msg["tool_calls"])
				}
				extra, _ := json.Marshal(calls[0].(map[string]any)["extra_content"])
				if string(extra) != `{"google":{"thought_signature":"CpwBAdHtim9="}}` {
					return fmt.Errorf("extra_content %s", extra)
				}
				return nil
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var second map[string]any
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				calls++
				w.Header().Set("Content-Type", "application/json")
				if calls == 1 {
					fmt.Fprint(w, tt.first)
					return
				}
				json.Unmarshal(b, &second)
				fmt.Fprint(w, `{"id":"x2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`)
			}))
			defer srv.Close()
			c := newCLI(t)
			c.env = append(c.env, "OPENAI_API_KEY=k")
			if _, stderr, code := c.run("", "run", "--dir", t.TempDir(), "--yes", "--model", "openai/m", "--base-url", srv.URL+"/v1", "look around"); code != 0 {
				t.Fatalf("run: %d %s", code, stderr)
			}
			msgs, _ := second["messages"].([]any)
			var assistant map[string]any
			for _, m := range msgs {
				if mm := m.(map[string]any); mm["role"] == "assistant" {
					assistant = mm
				}
			}
			if assistant == nil {
				t.Fatalf("no assistant message in the second request: %v", second)
			}
			if err := tt.check(assistant); err != nil {
				t.Fatal(err)
			}
		})
	}
}
