package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// countingProvider is a loopback OpenAI-compatible server whose every
// reply is a tool call that reports usage (so the session would go on),
// recording each request body.
func countingProvider(t *testing.T, usage string) (url string, bodies func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		n := len(got)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"list_files","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":%s}`, n, n, usage)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// A dollar budget is checked before each call, the first included, from
// the call's input tokens and the output it asks for at most, at the
// model's prices: a budget smaller than one call makes no call at all.
func TestCostBudgetRefusesTheFirstCall(t *testing.T) {
	url, bodies := countingProvider(t, `{"prompt_tokens":2000,"completion_tokens":10,"total_tokens":2010}`)
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=sk-test")
	_, stderr, code := c.run("", "run", "--dir", t.TempDir(), "--yes", "--budget-usd", "0.0001", "--model", "openai/gpt-4.1", "--base-url", url, "list the files")
	if code != exitLimit {
		t.Fatalf("exit %d, want %d: %s", code, exitLimit, stderr)
	}
	if n := len(bodies()); n != 0 {
		t.Fatalf("%d model calls under a budget smaller than one call", n)
	}
	s := showJSON(t, c, sessionID(t, c))
	if s.Status != "failed" || s.Reason != "budget_cost" || !strings.Contains(s.Detail, "spent $0 of $0.0001") {
		t.Fatalf("%s (%s): %s", s.Status, s.Reason, s.Detail)
	}
}

// A budget that covers one call but not two makes exactly one, and the
// call carries the output cap it was priced with.
func TestCostBudgetAllowsWhatItCovers(t *testing.T) {
	// gpt-4.1: $2 in, $8 out per million tokens. The reply reports
	// $0.004 + $0.024 = $0.028; the next call could cost ~$0.033 more.
	url, bodies := countingProvider(t, `{"prompt_tokens":2000,"completion_tokens":3000,"total_tokens":5000}`)
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=sk-test")
	_, stderr, code := c.run("", "run", "--dir", t.TempDir(), "--yes", "--budget-usd", "0.05", "--model", "openai/gpt-4.1", "--base-url", url, "list the files")
	if code != exitLimit {
		t.Fatalf("exit %d, want %d: %s", code, exitLimit, stderr)
	}
	got := bodies()
	if len(got) != 1 {
		t.Fatalf("%d model calls, want 1", len(got))
	}
	var req struct {
		MaxTokens int `json:"max_completion_tokens"`
	}
	if err := json.Unmarshal([]byte(got[0]), &req); err != nil || req.MaxTokens != 4096 {
		t.Fatalf("the call asked for %d output tokens (%v), want the cap it was priced with", req.MaxTokens, err)
	}
	s := showJSON(t, c, sessionID(t, c))
	if s.Status != "failed" || s.Reason != "budget_cost" || !strings.Contains(s.Detail, "spent $0.028 of $0.05") {
		t.Fatalf("%s (%s): %s", s.Status, s.Reason, s.Detail)
	}
}

// The token budget follows the same rule: no call that could cross it.
func TestTokenBudgetRefusesTheFirstCall(t *testing.T) {
	url, bodies := countingProvider(t, `{"prompt_tokens":2000,"completion_tokens":10,"total_tokens":2010}`)
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=sk-test")
	_, stderr, code := c.run("", "run", "--dir", t.TempDir(), "--yes", "--budget-tokens", "3000", "--model", "openai/gpt-4.1", "--base-url", url, "list the files")
	if code != exitLimit {
		t.Fatalf("exit %d, want %d: %s", code, exitLimit, stderr)
	}
	if n := len(bodies()); n != 0 {
		t.Fatalf("%d model calls under a token budget smaller than one call", n)
	}
	if s := showJSON(t, c, sessionID(t, c)); s.Reason != "budget_tokens" {
		t.Fatalf("%s (%s): %s", s.Status, s.Reason, s.Detail)
	}
}
