package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// After a served session that used a provider key and an agentloop API
// key — a command that printed its environment, and a provider that
// answered 401 repeating the key it was sent — neither key is anywhere a
// person or a later process can read: the database files, the server's
// log, the API's answers (session, events, list, metrics) or the dashboard.
func TestSecretsStayOutOfEverythingAServerShows(t *testing.T) {
	const providerKey = "sk-test-PROVIDER-9c2e51"
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"execute_command","arguments":"{\"command\":\"env; tr '\\\\0' '\\\\n' < /proc/$PPID/environ\"}"}}]},"finish_reason":"tool_calls"}]}`)
			return
		}
		// Providers quote the key they refused (some in full).
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. You can find your API key at https://example.com.","type":"invalid_request_error","code":"invalid_api_key"}}`, r.Header.Get("Authorization")[len("Bearer "):])
	}))
	defer srv.Close()

	c := newCLI(t)
	opKey, errOut, code := c.run("", "keys", "create", "--db", c.db, "--tenant", "acme", "--role", "operator")
	opKey = strings.TrimSpace(opKey)
	if code != 0 || !strings.HasPrefix(opKey, "al_") {
		t.Fatalf("keys create: %d %q %s", code, opKey, errOut)
	}
	adminKey, _, _ := c.run("", "keys", "create", "--db", c.db, "--tenant", "acme", "--role", "admin")
	adminKey = strings.TrimSpace(adminKey)
	c.env = append(c.env, "OPENAI_API_KEY="+providerKey)
	s := c.serve("--auth", "keys", "--yes", "--model", "openai/m", "--base-url", srv.URL+"/v1", "--workspaces", t.TempDir())

	get := func(path, key string) string {
		req, _ := http.NewRequest("GET", s.url+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("GET %s → %d\n%s", path, resp.StatusCode, b)
	}
	req, _ := http.NewRequest("POST", s.url+"/v1/sessions", strings.NewReader(`{"task":"show the environment"}`))
	req.Header.Set("Authorization", "Bearer "+opKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := between(string(b), `"id":"`, `"`)
	if id == "" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var session string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		session = get("/v1/sessions/"+id, opKey)
		if !strings.Contains(session, `"status":"running"`) {
			break
		}
	}
	if !strings.Contains(session, `"status":"error"`) && !strings.Contains(session, `"status":"paused"`) {
		t.Fatalf("the session did not stop on the 401: %s", session)
	}
	events := get("/v1/sessions/"+id+"/events", opKey)
	if !strings.Contains(events, "PATH=") {
		t.Fatalf("the command's output (the environment) is not in the events, so this test checks nothing: %.1000s", events)
	}
	if !strings.Contains(events, "Incorrect API key provided") {
		t.Fatalf("the provider's refusal is not in the events: %.2000s", events)
	}
	shown := map[string]string{
		"session":   session,
		"events":    events,
		"list":      get("/v1/sessions", opKey),
		"metrics":   get("/metrics", adminKey),
		"keys":      get("/v1/keys", adminKey),
		"dashboard": get("/", ""),
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
	shown["server log"] = s.errText()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if b, err := os.ReadFile(c.db + suffix); err == nil {
			shown["database file "+filepath.Base(c.db+suffix)] = string(b)
		}
	}
	for where, text := range shown {
		for name, secret := range map[string]string{"provider key": providerKey, "operator key": opKey, "admin key": adminKey} {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("the %s is in the %s: …%s…", name, where, text[max(i-200, 0):min(i+len(secret)+50, len(text))])
			}
		}
	}
}
