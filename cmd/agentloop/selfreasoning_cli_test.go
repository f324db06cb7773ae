package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Self-reasoning ends only on the completion marker, so with a one-step
// limit the model must hear on that step that it is the last one. A model
// that follows the warning completes.
func TestSelfReasoningOneStepWarnsAndCompletes(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		text := "Let me think about this step by step."
		if strings.Contains(string(b), "1 of 1 maximum") {
			text = "TASK_COMPLETE: 42"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, text)
	}))
	defer srv.Close()
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=sk-test")
	out, errOut, code := c.run("", "run", "--mode", "self-reasoning", "--max-iterations", "1", "--model", "openai/m", "--base-url", srv.URL+"/v1", "--dir", t.TempDir(), "6 times 7?")
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) == 0 || !strings.Contains(bodies[0], "1 of 1 maximum") {
		t.Fatalf("the only step carried no final-step warning: %.2000s", bodies)
	}
	if code != exitCompleted || strings.TrimSpace(out) != "42" {
		t.Fatalf("exit %d, answer %q: %s", code, out, errOut)
	}
}
