package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/notify"
)

// agentloop serve --webhook URL with the secret in a file: a session that
// ends is POSTed to the URL, signed with that secret, with the event's
// session:seq as its delivery id.
func TestServeWebhookDeliversSignedNotifications(t *testing.T) {
	const secret = "cli-secret"
	got := make(chan map[string]any, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get("X-Agentloop-Timestamp"), 10, 64)
		if sig := r.Header.Get("X-Agentloop-Signature"); sig != notify.Sign(secret, ts, body) {
			t.Errorf("signature %q does not sign %s", sig, body)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p map[string]any
		if err := json.Unmarshal(body, &p); err != nil || p["id"] != r.Header.Get("X-Agentloop-Delivery") {
			t.Errorf("delivery %q, body %s", r.Header.Get("X-Agentloop-Delivery"), body)
		}
		w.WriteHeader(http.StatusNoContent)
		got <- p
	}))
	defer recv.Close()
	file := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	s := c.serve("--model", "script:"+writeScript(t, `{"steps":[{"text":"all done"}]}`), "--workspaces", t.TempDir(),
		"--webhook", recv.URL+"/hook", "--webhook-secret-file", file, "--webhook-allow-private")
	code, out := s.post(t, "/v1/sessions", `{"task":"say hi"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, out)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(out), &created)
	s.waitFor(t, created.ID, "completed")
	select {
	case p := <-got:
		if p["kind"] != "ended" || p["status"] != "completed" || p["session_id"] != created.ID || !strings.HasPrefix(p["id"].(string), created.ID+":") {
			t.Errorf("notification: %v", p)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no notification arrived\n%s", s.errText())
	}
	// The delivery is on record, as delivered.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, list, _ := s.send(t, request{method: "GET", path: "/v1/webhooks/deliveries"})
		if strings.Contains(list, `"status":"delivered"`) && strings.Contains(list, created.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries: %s", list)
		}
	}
}

// Webhook settings that cannot work stop serve before it listens, saying
// what to do.
func TestServeWebhookRefusesWhatCannotWork(t *testing.T) {
	c := newCLI(t)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--webhook", "https://hooks.example.com/x"}, "--webhook-secret-file"},
		{[]string{"--webhook", "http://127.0.0.1:9/x", "--webhook-secret-file", empty}, "is empty"},
		{[]string{"--webhook", "ftp://hooks.example.com/x"}, "http:// or https://"},
	} {
		_, stderr, code := c.run("", append([]string{"serve", "--db", c.db, "--addr", "127.0.0.1:0"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.says) || strings.Contains(stderr, "listening") {
			t.Errorf("serve %v: exit %d, stderr %q (want it to say %q)", tc.args, code, stderr, tc.says)
		}
	}
	// A loopback URL needs --webhook-allow-private.
	c.env = []string{"AGENTLOOP_WEBHOOK_SECRET=s"}
	_, stderr, code := c.run("", "serve", "--db", c.db, "--addr", "127.0.0.1:0", "--webhook", "http://127.0.0.1:9/x")
	if code == 0 || !strings.Contains(stderr, "--webhook-allow-private") {
		t.Errorf("loopback webhook: exit %d, %s", code, stderr)
	}
}
