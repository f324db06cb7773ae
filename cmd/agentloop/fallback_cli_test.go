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

// fallbackServer is an OpenAI-compatible loopback server: model "a" is
// gone (404) unless aWorks, any other model answers; with toolFirst the
// first reply asks to read a file that does not exist.
func fallbackServer(t *testing.T, aWorks, toolFirst bool) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var models []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(b, &req)
		mu.Lock()
		models = append(models, req.Model)
		n := len(models)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if req.Model == "a" && !aWorks {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"message":"model gone"}}`)
			return
		}
		if toolFirst && n == 1 {
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"missing.txt\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
			return
		}
		fmt.Fprintf(w, `{"id":"c2","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"done by %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`, req.Model, req.Model)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), models...)
	}
}

func onlySessionID(t *testing.T, c *cli) string {
	t.Helper()
	out, _, _ := c.run("", "sessions", "list", "--json")
	i := strings.Index(out, `"id": "`)
	if i < 0 {
		t.Fatalf("no session listed: %s", out)
	}
	id := out[i+7:]
	return id[:strings.Index(id, `"`)]
}

// A model that is gone (404) hands the session to the next fallback
// model: model.switched is recorded, and the step shows the model that
// did it.
func TestFallbackModelTakesOverFromAGoneModel(t *testing.T) {
	srv, models := fallbackServer(t, false, false)
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=sk-test")
	stdout, stderr, code := c.run("", "run", "--dir", t.TempDir(), "--yes", "--model", "openai/a", "--fallback-models", "openai/b", "--base-url", srv.URL+"/v1", "say done")
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, stdout, stderr)
	}
	if got := models(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("the calls went to %q, want a then b", got)
	}
	id := onlySessionID(t, c)
	events, _, _ := c.run("", "sessions", "show", "--events", id)
	if !strings.Contains(events, "model.switched") || !strings.Contains(events, "model gone") {
		t.Fatalf("no model.switched with why in the events:\n%s", events)
	}
	show, _, _ := c.run("", "sessions", "show", id)
	if !strings.Contains(show, "completed") || !regexpStep(show, "openai/b") || !strings.Contains(show, "now on openai/b") {
		t.Fatalf("sessions show does not say B did the step:\n%s", show)
	}
	js, _, _ := c.run("", "sessions", "show", "--json", id)
	var st struct {
		Status       string `json:"status"`
		CurrentModel string `json:"current_model"`
		Iterations   []struct {
			Model string `json:"model"`
		} `json:"iterations"`
	}
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatalf("%v\n%.500s", err, js)
	}
	if st.Status != "completed" || st.CurrentModel != "openai/b" || len(st.Iterations) != 1 || st.Iterations[0].Model != "openai/b" {
		t.Fatalf("state: %+v", st)
	}
}

// regexpStep says whether a "── Step" line of sessions show names model.
func regexpStep(show, model string) bool {
	for _, line := range strings.Split(show, "\n") {
		if strings.HasPrefix(line, "── Step") && strings.Contains(line, model) {
			return true
		}
	}
	return false
}

// A tool error is the session's work going wrong, not the model: the
// session stays on its model.
func TestFallbackModelNotOnToolError(t *testing.T) {
	srv, models := fallbackServer(t, true, true)
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=sk-test")
	stdout, stderr, code := c.run("", "run", "--dir", t.TempDir(), "--yes", "--model", "openai/a", "--fallback-models", "openai/b", "--base-url", srv.URL+"/v1", "read missing.txt")
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, stdout, stderr)
	}
	for _, m := range models() {
		if m != "a" {
			t.Fatalf("a call went to %q after a tool error: %q", m, models())
		}
	}
	id := onlySessionID(t, c)
	events, _, _ := c.run("", "sessions", "show", "--events", id)
	if strings.Contains(events, "model.switched") || !strings.Contains(events, `"is_error":true`) {
		t.Fatalf("events:\n%s", events)
	}
}
