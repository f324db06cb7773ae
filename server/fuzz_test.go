package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzAPI sends the real router, over real HTTP, requests built from
// fuzzed methods, paths, bodies and headers. A client's mistake must never
// be a server error: no 5xx, no panic (a panic in a handler is a 500 from
// the recovery below it, and fails the same way), and the server still
// answers afterwards.
//
//	go test ./server -run '^$' -fuzz FuzzAPI -fuzztime 60s
func FuzzAPI(f *testing.F) {
	a := newAPI(f, false)
	id := a.create("", `{"task":"say hi"}`)
	a.waitStatus("", id, "completed")
	for _, seed := range []struct {
		method       byte
		path, body   string
		header, hval string
	}{
		{0, "/v1/sessions", "", "", ""},
		{1, "/v1/sessions", `{"task":"x"}`, "Idempotency-Key", "k1"},
		{1, "/v1/sessions", `{"task":`, "", ""},
		{1, "/v1/sessions", `{"task":"x","max_iterations":-5,"labels":{"a":1}}`, "", ""},
		{1, "/v1/sessions", `{"messages":[{"role":"nobody","content":3}]}`, "", ""},
		{1, "/v1/sessions", `{"task":"x","workspace":"../../../../etc"}`, "", ""},
		{1, "/v1/sessions", `{"task":"x","workspace":"/etc"}`, "", ""},
		{1, "/v1/sessions", `{"task":"x","model":"script:/etc/passwd"}`, "", ""},
		{1, "/v1/sessions", "{\"task\":\"\x00\xff\xfe\"}", "", ""},
		{1, "/v1/sessions", `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, "", ""},
		{0, "/v1/sessions/{id}", "", "", ""},
		{0, "/v1/sessions/..%2F..%2Fetc%2Fpasswd", "", "", ""},
		{0, "/v1/sessions/{id}/events?after=-1&limit=99999999999999999999", "", "", ""},
		{0, "/v1/sessions/{id}/events", "", "Accept", "text/event-stream"},
		{0, "/v1/sessions/{id}/events", "", "Last-Event-ID", "-7"},
		{0, "/v1/sessions/{id}/events", "", "Upgrade", "websocket"},
		{1, "/v1/sessions/{id}/pause", `{"reason":5}`, "", ""},
		{1, "/v1/sessions/{id}/resume", ``, "", ""},
		{1, "/v1/sessions/{id}/terminate", `{"reason":""}`, "", ""},
		{1, "/v1/sessions/{id}/reply", `{"text":"` + strings.Repeat("x", 2000) + `"}`, "", ""},
		{1, "/v1/sessions/{id}/approvals/call_1", `{"approve":true,"args_hash":"zz"}`, "", ""},
		{2, "/v1/sessions/{id}", "", "", ""},
		{2, "/v1/sessions?ended_before=-1h", "", "", ""},
		{3, "/v1/prompts/..%2Fx", `{"text":"hi"}`, "", ""},
		{0, "/v1/prompts/none", "", "", ""},
		{1, "/v1/keys", `{"tenant":"","role":"god"}`, "", ""},
		{2, "/v1/keys/key_zzz", "", "", ""},
		{0, "/v1/events", "", "Accept", "text/event-stream"},
		{0, "/v1/sessions?status=bogus&limit=abc&cursor=%00", "", "", ""},
		{4, "/v1/sessions", "", "", ""},
		{0, "/metrics", "", "Authorization", "Bearer nope"},
		{0, "/", "", "", ""},
		{0, "/assets/../../server.go", "", "", ""},
	} {
		f.Add(seed.method, seed.path, seed.body, seed.header, seed.hval)
	}
	methods := []string{"GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"}
	f.Fuzz(func(t *testing.T, m byte, path, body, header, hval string) {
		path = strings.ReplaceAll(path, "{id}", id)
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond) // streams stay open; a bounded look is enough
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, methods[int(m)%len(methods)], a.url+path, strings.NewReader(body))
		if err != nil {
			return // not a request an HTTP client can send
		}
		if header != "" {
			if strings.EqualFold(header, "Host") || strings.EqualFold(header, "Content-Length") || strings.EqualFold(header, "Transfer-Encoding") || strings.EqualFold(header, "Connection") {
				return // transport framing, not the API's
			}
			req.Header.Set(header, hval)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() != nil || strings.Contains(err.Error(), "invalid header") {
				return // a stream cut by the deadline, or a header no client can send
			}
			// net/http answers a handler's panic by dropping the connection.
			t.Fatalf("%s %s (%s: %q) body %q: the connection failed: %v", req.Method, path, header, hval, body, err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s (%s: %q) body %q → %d", req.Method, path, header, hval, body, resp.StatusCode)
		}
	})
}
