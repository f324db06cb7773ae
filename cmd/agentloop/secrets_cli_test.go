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

// The model's key is not readable by the commands the agent runs — not
// in their environment, not through /proc/$PPID/environ of agentloop —
// so it never lands in the log or goes back to the model; and it still
// authenticates the model calls.
func TestCommandsCannotReadTheAPIKey(t *testing.T) {
	const secret = "sk-test-SECRET-4d1f"
	var mu sync.Mutex
	var auths, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"execute_command","arguments":"{\"command\":\"tr '\\\\0' '\\\\n' < /proc/$PPID/environ; echo ---; env\"}"}}]},"finish_reason":"tool_calls"}]}`)
			return
		}
		fmt.Fprint(w, `{"id":"c2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY="+secret, "SOME_SERVICE_TOKEN=tok-"+secret)
	_, stderr, code := c.run("", "run", "--dir", t.TempDir(), "--yes", "--model", "openai/m", "--base-url", srv.URL+"/v1", "show the environment")
	if code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || auths[0] != "Bearer "+secret {
		t.Fatalf("%d model calls, authorization %q", len(bodies), auths)
	}
	if !strings.Contains(bodies[1], "---") || !strings.Contains(bodies[1], "PATH=") {
		t.Fatalf("the command's output did not reach the model: %.500s", bodies[1])
	}
	if strings.Contains(bodies[1], secret) {
		t.Fatalf("the key went back to the model in the command's output: %.2000s", bodies[1])
	}
	out, _, _ := c.run("", "sessions", "list", "--json")
	id := out[strings.Index(out, `"id": "`)+7:]
	id = id[:strings.Index(id, `"`)]
	show, _, _ := c.run("", "sessions", "show", "--json", id)
	if strings.Contains(show, secret) {
		t.Fatal("the key is in the session's log")
	}
}
