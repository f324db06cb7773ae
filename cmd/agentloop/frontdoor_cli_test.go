package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// request is one raw request to a running server.
type request struct {
	method, path, body string
	header             map[string]string
}

// send makes the request and returns its status, body and headers.
func (s *serving) send(t *testing.T, rq request) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(rq.method, s.url+rq.path, strings.NewReader(rq.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range rq.header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// sessionCount is how many sessions the server lists.
func (s *serving) sessionCount(t *testing.T) int {
	t.Helper()
	code, body, _ := s.send(t, request{method: "GET", path: "/v1/sessions?limit=500"})
	var page struct{ Sessions []json.RawMessage }
	if code != 200 || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("list: %d %s", code, body)
	}
	return len(page.Sessions)
}

// A local server with its defaults (no keys, no --yes) refuses what a web
// page the user visits could send it, and every refusal creates nothing.
func TestFrontDoorRefusesWhatAPageCouldSend(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[{"text":"done"}]}`)
	s := c.serve("--model", "script:"+script, "--workspaces", t.TempDir())
	const task = `{"task":"touch pwned","workspace":"y","approval":"auto"}`
	const plainTask = `{"task":"say hi"}`
	evil := "https://evil.example"
	refused := []struct {
		name   string
		rq     request
		status int
		says   string
	}{
		{"cross-origin text/plain POST", request{"POST", "/v1/sessions", task, map[string]string{"Content-Type": "text/plain", "Origin": evil}}, 403, "cross-origin"},
		{"cross-origin form POST", request{"POST", "/v1/sessions", "task=x", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": evil}}, 403, "cross-origin"},
		{"cross-origin JSON POST (Origin only)", request{"POST", "/v1/sessions", plainTask, map[string]string{"Content-Type": "application/json", "Origin": evil}}, 403, "cross-origin"},
		{"Sec-Fetch-Site: cross-site", request{"POST", "/v1/sessions", plainTask, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}}, 403, "cross-origin"},
		{"Sec-Fetch-Site: same-site (a sibling subdomain)", request{"POST", "/v1/sessions", plainTask, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}}, 403, "cross-origin"},
		{"cross-origin pause", request{"POST", "/v1/sessions/abc/pause", "", map[string]string{"Origin": evil}}, 403, "cross-origin"},
		{"cross-origin key creation", request{"POST", "/v1/keys", `{"tenant":"t","role":"admin"}`, map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"}}, 403, "cross-origin"},
		{"text/plain without an origin (not JSON)", request{"POST", "/v1/sessions", plainTask, map[string]string{"Content-Type": "text/plain"}}, 415, "Content-Type: application/json"},
		{"no content type", request{"POST", "/v1/sessions", plainTask, nil}, 415, "Content-Type: application/json"},
		{"foreign Host (DNS rebinding), read", request{"GET", "/v1/sessions", "", map[string]string{"Host": "attacker.example:7420"}}, 421, "--auth keys"},
		{"foreign Host, write", request{"POST", "/v1/sessions", plainTask, map[string]string{"Host": "attacker.example", "Content-Type": "application/json"}}, 421, "loopback"},
		{"WebSocket upgrade from another origin", request{"GET", "/v1/sessions/abc/events", "", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": evil}}, 403, "WebSocket"},
		{"approval auto without --yes", request{"POST", "/v1/sessions", `{"task":"x","approval":"auto"}`, map[string]string{"Content-Type": "application/json"}}, 403, "--yes"},
		{"a scripted model naming a server file", request{"POST", "/v1/sessions", `{"task":"x","model":"script:/etc/hostname"}`, map[string]string{"Content-Type": "application/json"}}, 403, "--allow-script-models"},
		{"a scripted model naming a missing file", request{"POST", "/v1/sessions", `{"task":"x","model":"script:/nonexistent/x.json"}`, map[string]string{"Content-Type": "application/json"}}, 403, "--allow-script-models"},
		{"a protocol file", request{"POST", "/v1/sessions", `{"task":"x","protocol":"/etc/passwd"}`, map[string]string{"Content-Type": "application/json"}}, 403, "--allow-script-models"},
		{"verify commands in a session that asks", request{"POST", "/v1/sessions", `{"task":"x","verify":["id"]}`, map[string]string{"Content-Type": "application/json"}}, 403, "verify"},
	}
	before := s.sessionCount(t)
	for _, r := range refused {
		code, body, hdr := s.send(t, r.rq)
		if code != r.status || !strings.Contains(body, r.says) || !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s: %d %s %q, want %d problem+json saying %q", r.name, code, hdr.Get("Content-Type"), body, r.status, r.says)
		}
		if strings.Contains(body, "No such file") || strings.Contains(body, "hostname") {
			t.Errorf("%s: the answer tells about the server's files: %s", r.name, body)
		}
	}
	if after := s.sessionCount(t); after != before {
		t.Fatalf("refused requests created %d sessions", after-before)
	}

	// What the dashboard and a local client send still works: the same
	// origin, loopback names, JSON.
	admitted := []request{
		{"POST", "/v1/sessions", plainTask, map[string]string{"Content-Type": "application/json", "Origin": s.url, "Sec-Fetch-Site": "same-origin"}},
		{"POST", "/v1/sessions", plainTask, map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{"POST", "/v1/sessions", plainTask, map[string]string{"Content-Type": "application/json", "Host": "localhost" + s.url[strings.LastIndex(s.url, ":"):]}},
	}
	for i, rq := range admitted {
		if code, body, _ := s.send(t, rq); code != 201 {
			t.Errorf("admitted request %d: %d %s", i, code, body)
		}
	}
	if after := s.sessionCount(t); after != before+len(admitted) {
		t.Fatalf("%d sessions after %d admitted creates, want %d", after, len(admitted), before+len(admitted))
	}
	if code, _, _ := s.send(t, request{"GET", "/healthz", "", map[string]string{"Host": "10.1.2.3:7420"}}); code != 200 {
		t.Errorf("a probe by address: /healthz %d", code)
	}
}

// An operator lets a front end on another origin in: its requests and
// preflights get CORS answers; other origins stay out.
func TestAllowedOriginsLetAFrontEndIn(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[{"text":"done"}]}`)
	front := "http://front.example:8080"
	s := c.serve("--model", "script:"+script, "--workspaces", t.TempDir(), "--allowed-origins", front+",https://other.example")
	code, _, hdr := s.send(t, request{"OPTIONS", "/v1/sessions", "", map[string]string{"Origin": front, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}})
	if code != 204 || hdr.Get("Access-Control-Allow-Origin") != front || !strings.Contains(hdr.Get("Access-Control-Allow-Headers"), "Content-Type") {
		t.Fatalf("preflight: %d %v", code, hdr)
	}
	code, body, hdr := s.send(t, request{"POST", "/v1/sessions", `{"task":"hi"}`, map[string]string{"Content-Type": "application/json", "Origin": front, "Sec-Fetch-Site": "cross-site"}})
	if code != 201 || hdr.Get("Access-Control-Allow-Origin") != front {
		t.Fatalf("the allowed front end's create: %d %s %v", code, body, hdr)
	}
	code, body, hdr = s.send(t, request{"POST", "/v1/sessions", `{"task":"hi"}`, map[string]string{"Content-Type": "application/json", "Origin": "http://front.example:9999", "Sec-Fetch-Site": "cross-site"}})
	if code != 403 || hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another port of the same host: %d %s %v", code, body, hdr)
	}
	if _, stderr, code := c.run("", "serve", "--allowed-origins", "front.example", "--addr", "127.0.0.1:0"); code != exitUsage || !strings.Contains(stderr, "scheme://host") {
		t.Fatalf("a bad origin: %d %s", code, stderr)
	}
	for args, says := range map[string]string{
		"--public-url agents.example.com":         "scheme://host",
		"--public-url https://agents.example.com": "needs --auth keys",
	} {
		_, stderr, code := c.run("", append([]string{"serve", "--addr", "127.0.0.1:0"}, strings.Fields(args)...)...)
		if code != exitUsage || !strings.Contains(stderr, says) {
			t.Fatalf("serve %s: %d %s", args, code, stderr)
		}
	}
}

// With --yes, requests may ask for approval auto and bring verification
// commands, within bounds.
func TestVerifyCommandsAreBounded(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[{"text":"done"}]}`)
	s := c.serve("--yes", "--model", "script:"+script, "--workspaces", t.TempDir())
	many := make([]string, 17)
	for i := range many {
		many[i] = fmt.Sprintf("%q", "true")
	}
	for body, want := range map[string]int{
		`{"task":"x","approval":"auto","verify":["true"]}`:            201,
		`{"task":"x","verify":[` + strings.Join(many, ",") + `]}`:     400,
		`{"task":"x","verify":["` + strings.Repeat("a", 5000) + `"]}`: 400,
		`{"task":"x","verify":["  "]}`:                                400,
		`{"task":"x","approval":"ask","verify":["true"]}`:             403,
	} {
		if code, got, _ := s.send(t, request{"POST", "/v1/sessions", body, map[string]string{"Content-Type": "application/json"}}); code != want {
			t.Errorf("%.60s: %d %s, want %d", body, code, got, want)
		}
	}
}

// With keys, a public URL names the one Host answered besides loopback,
// and a revoked key's open event stream ends — revoked over the API or by
// the CLI in another process.
func TestKeysPublicURLAndRevokedStreams(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[{"tool_calls":[{"name":"ask_user","arguments":{"question":"go on?"}}]},{"text":"done"}]}`)
	admin, _ := c.key("t1", "admin")
	s := c.serve("--auth", "keys", "--public-url", "https://agents.example.com", "--model", "script:"+script, "--workspaces", t.TempDir())
	auth := func(key string, h map[string]string) map[string]string {
		if h == nil {
			h = map[string]string{}
		}
		h["Authorization"] = "Bearer " + key
		return h
	}
	if code, body, _ := s.send(t, request{"GET", "/v1/sessions", "", auth(admin, map[string]string{"Host": "agents.example.com"})}); code != 200 {
		t.Fatalf("the public host: %d %s", code, body)
	}
	if code, body, _ := s.send(t, request{"GET", "/v1/sessions", "", auth(admin, map[string]string{"Host": "elsewhere.example"})}); code != 421 || !strings.Contains(body, "agents.example.com") {
		t.Fatalf("another host: %d %s", code, body)
	}
	// An admin key may ask for approval auto; an operator may not.
	op, _ := c.key("t1", "operator")
	if code, body, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"x","approval":"auto"}`, auth(op, map[string]string{"Content-Type": "application/json"})}); code != 403 || !strings.Contains(body, "admin key") {
		t.Fatalf("an operator asking for auto: %d %s", code, body)
	}
	code, body, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"x","approval":"auto"}`, auth(admin, map[string]string{"Content-Type": "application/json"})})
	if code != 201 {
		t.Fatalf("an admin asking for auto: %d %s", code, body)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)

	streamEnds := func(key string, revoke func()) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/sessions/"+created.ID+"/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", err, resp)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() { // read the replay up to the session's question
			if strings.Contains(sc.Text(), "session.waiting") {
				break
			}
		}
		revoke()
		for sc.Scan() {
		}
		if ctx.Err() != nil {
			t.Fatal("the revoked key's stream stayed open")
		}
	}
	viewer, id := c.key("t1", "viewer")
	streamEnds(viewer, func() {
		if code, body, _ := s.send(t, request{"DELETE", "/v1/keys/" + id, "", auth(admin, nil)}); code != 204 {
			t.Fatalf("revoke: %d %s", code, body)
		}
	})
	viewer2, id2 := c.key("t1", "viewer")
	streamEnds(viewer2, func() {
		if _, stderr, code := c.run("", "keys", "revoke", "--db", c.db, id2); code != 0 {
			t.Fatalf("keys revoke: %d %s", code, stderr)
		}
	})
}

// key makes a key with the CLI and returns its secret and ID.
func (c *cli) key(tenant, role string) (secret, id string) {
	c.t.Helper()
	out, stderr, code := c.run("", "keys", "create", "--db", c.db, "--tenant", tenant, "--role", role)
	if code != 0 || !strings.HasPrefix(out, "al_") {
		c.t.Fatalf("keys create: %d %q %s", code, out, stderr)
	}
	f := strings.Fields(stderr)
	if len(f) < 2 || f[0] != "key" {
		c.t.Fatalf("keys create said %q", stderr)
	}
	return strings.TrimSpace(out), f[1]
}

// A key given in --base-url's query reaches the provider on every call
// and never the session's log: not through run, not through serve.
func TestBaseURLCredentialsStayOutOfTheLog(t *testing.T) {
	const secret = "gw-SECRET-77aa"
	calls := 0
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" || r.URL.Query().Get("api_key") != secret {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"bad key or path %s"}}`, r.URL.Path)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	base := srv.URL + "/v1?api_key=" + secret
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=unused-by-this-gateway")
	if _, stderr, code := c.run("", "run", "--dir", t.TempDir(), "--model", "openai/m", "--base-url", base, "say done"); code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	show, _, _ := c.run("", "sessions", "show", "--json", sessionID(t, c))
	if strings.Contains(show, secret) || !strings.Contains(show, srv.URL) {
		t.Fatalf("the recorded endpoint: %s", show)
	}

	s := c.serve("--model", "openai/m", "--base-url", base, "--workspaces", t.TempDir())
	code, body, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"say done"}`, map[string]string{"Content-Type": "application/json"}})
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	if st := s.waitFor(t, created.ID, "completed", "failed", "paused", "error"); st != "completed" {
		_, got, _ := s.send(t, request{"GET", "/v1/sessions/" + created.ID, "", nil})
		t.Fatalf("the served session is %s: %s", st, got)
	}
	for _, path := range []string{"/v1/sessions/" + created.ID, "/v1/sessions/" + created.ID + "/events"} {
		if _, got, _ := s.send(t, request{"GET", path, "", nil}); strings.Contains(got, secret) {
			t.Fatalf("%s holds the key: %s", path, got)
		}
	}
}

// An Idempotency-Key replays its request; with another body it is a
// mistake (422). The last page of a list has no next_cursor.
func TestIdempotencyKeyAndLastPage(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[{"text":"done"}]}`)
	s := c.serve("--model", "script:"+script, "--workspaces", t.TempDir())
	h := map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k1"}
	code1, first, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"one"}`, h})
	code2, again, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"one"}`, h})
	if code1 != 201 || code2 != 200 || first[:30] != again[:30] {
		t.Fatalf("replay: %d %s / %d %s", code1, first, code2, again)
	}
	if code, body, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"two"}`, h}); code != 422 || !strings.Contains(body, "different request") {
		t.Fatalf("the same key, another body: %d %s", code, body)
	}
	s.send(t, request{"POST", "/v1/sessions", `{"task":"three"}`, map[string]string{"Content-Type": "application/json"}})
	var page struct {
		Sessions   []json.RawMessage
		NextCursor string `json:"next_cursor"`
	}
	_, body, _ := s.send(t, request{"GET", "/v1/sessions?limit=1", "", nil})
	json.Unmarshal([]byte(body), &page)
	if len(page.Sessions) != 1 || page.NextCursor == "" {
		t.Fatalf("first page: %s", body)
	}
	_, body, _ = s.send(t, request{"GET", "/v1/sessions?limit=1&cursor=" + page.NextCursor, "", nil})
	page.NextCursor = ""
	json.Unmarshal([]byte(body), &page)
	if len(page.Sessions) != 1 || page.NextCursor != "" {
		t.Fatalf("the last page: %s", body)
	}
	// A status that does not exist is a mistake, not "no sessions".
	if code, body, _ := s.send(t, request{"GET", "/v1/sessions?status=runing", "", nil}); code != 400 || !strings.Contains(body, "use running") {
		t.Fatalf("a bad status filter: %d %s", code, body)
	}
	if _, stderr, code := c.run("", "sessions", "list", "--status", "runing"); code != exitUsage || !strings.Contains(stderr, "use running") {
		t.Fatalf("sessions list --status runing: %d %s", code, stderr)
	}
}
