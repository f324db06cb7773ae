package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/sqlite"
)

type api struct {
	t    testing.TB
	url  string
	st   *sqlite.Store
	dir  string
	keys map[string]string // role@tenant → key
}

// newAPI serves the API over real HTTP on loopback, with keys required;
// options adjust the service's configuration.
func newAPI(t testing.TB, requireKeys bool, options ...func(*service.Config)) *api {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	workspaces := &server.Workspaces{}
	resolver := &assemble.Resolver{OnWorkspace: workspaces.Track}
	cfg := service.Config{Store: st, Runner: resolver.RunnerConfig(st, price.Default())}
	for _, o := range options {
		o(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o700)
	h := server.New(server.Config{Service: svc, Keys: st, RequireKeys: requireKeys, Heartbeat: 50 * time.Millisecond, Workspaces: workspaces,
		Defaults: server.Defaults{Approval: "auto", Workspaces: ws, AllowScripts: true, Model: "script:" + script(t, dir, "hello")}})
	t.Cleanup(h.Observe(st))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a := &api{t: t, url: srv.URL, st: st, dir: dir, keys: map[string]string{}}
	for _, k := range []struct{ tenant, role string }{{"acme", "operator"}, {"acme", "viewer"}, {"globex", "operator"}, {"globex", "admin"}} {
		secret, rec, err := server.NewKey(k.tenant, k.role, "test", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateKey(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		a.keys[k.role+"@"+k.tenant] = secret
	}
	return a
}

// script writes a scripted model that answers text after delay.
func script(t testing.TB, dir, text string, delays ...string) string {
	t.Helper()
	var steps []string
	for _, d := range delays {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"list_dir","arguments":{}}],"delay":%q}`, d))
	}
	steps = append(steps, fmt.Sprintf(`{"text":%q}`, text))
	path := filepath.Join(dir, fmt.Sprintf("script-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(`{"steps":[`+strings.Join(steps, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (a *api) do(method, path, key, body string, hdr ...string) (int, string, http.Header) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.url+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (a *api) create(key, body string) string {
	a.t.Helper()
	code, out, _ := a.do("POST", "/v1/sessions", key, body)
	if code != http.StatusCreated {
		a.t.Fatalf("create: %d %s", code, out)
	}
	var c struct{ ID, Status string }
	json.Unmarshal([]byte(out), &c)
	return c.ID
}

func (a *api) waitStatus(key, id, status string) {
	a.t.Helper()
	// Until the test binary's own deadline (-timeout), less a margin to
	// report: how long a session takes on a loaded machine is not the
	// test's business, only that it gets there.
	deadline := time.Now().Add(10 * time.Minute)
	if t, ok := a.t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := t.Deadline(); ok {
			deadline = d.Add(-10 * time.Second)
		}
	}
	var out string
	for time.Now().Before(deadline) {
		_, out, _ = a.do("GET", "/v1/sessions/"+id, key, "")
		var st struct{ Status string }
		if json.Unmarshal([]byte(out), &st) == nil && st.Status == status {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.t.Fatalf("session %s never became %s: %.300s", id, status, out)
}

func TestBadRequestsGetClearStatuses(t *testing.T) {
	a := newAPI(t, true)
	op, viewer, other := a.keys["operator@acme"], a.keys["viewer@acme"], a.keys["operator@globex"]
	id := a.create(op, `{"task":"say hi"}`)
	a.waitStatus(op, id, "completed")
	cases := []struct {
		name, method, path, key, body string
		status                        int
		says                          string
	}{
		{"no key", "GET", "/v1/sessions", "", "", 401, "requires an API key"},
		{"unknown key", "GET", "/v1/sessions", "al_nope", "", 401, "unknown API key"},
		{"malformed JSON", "POST", "/v1/sessions", op, `{"task":`, 400, "not valid JSON"},
		{"wrong type", "POST", "/v1/sessions", op, `{"task": 3}`, 400, `field \"task\" must be string`},
		{"unknown field", "POST", "/v1/sessions", op, `{"task":"x","colour":"red"}`, 400, `unknown field \"colour\"`},
		{"nothing to do", "POST", "/v1/sessions", op, `{}`, 400, "say what to do"},
		{"two asks", "POST", "/v1/sessions", op, `{"task":"x","user_message":"y"}`, 400, "not several"},
		{"bad mode", "POST", "/v1/sessions", op, `{"task":"x","mode":"turbo"}`, 400, "use tools, thinking, flash or self-reasoning"},
		{"workspace outside", "POST", "/v1/sessions", op, `{"task":"x","workspace":"../../etc"}`, 403, `not \".\" or \"..\"`},
		{"oversized body", "POST", "/v1/sessions", op, `{"task":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "too large"},
		{"trailing data", "POST", "/v1/sessions", op, `{"task":"x"} {}`, 400, "after its JSON"},
		{"a viewer starting", "POST", "/v1/sessions", viewer, `{"task":"x"}`, 403, "sessions:write"},
		{"a viewer controlling", "POST", "/v1/sessions/" + id + "/pause", viewer, ``, 403, "sessions:control"},
		{"another tenant's session", "GET", "/v1/sessions/" + id, other, "", 404, "not found"},
		{"another tenant's events", "GET", "/v1/sessions/" + id + "/events", other, "", 404, "not found"},
		{"another tenant terminating", "POST", "/v1/sessions/" + id + "/terminate", other, `{"reason":"failed"}`, 404, "not found"},
		{"path traversal in an id", "GET", "/v1/sessions/..%2f..%2fetc", op, "", 400, "not a session ID"},
		{"a bad id", "GET", "/v1/sessions/a.b", op, "", 400, "not a session ID"},
		{"an unknown id", "GET", "/v1/sessions/nosuch", op, "", 404, "not found"},
		{"a bad forked_from", "GET", "/v1/sessions?forked_from=a.b", op, "", 400, "not a session ID"},
		{"one session to compare", "GET", "/v1/sessions/compare?a=" + id, op, "", 400, "give the two sessions"},
		{"a bad id to compare", "GET", "/v1/sessions/compare?a=" + id + "&b=a.b", op, "", 400, "not a session ID"},
		{"comparing another tenant's session", "GET", "/v1/sessions/compare?a=" + id + "&b=" + id, other, "", 404, "not found"},
		{"forking another tenant's session", "POST", "/v1/sessions/" + id + "/fork", other, `{"at":1}`, 404, "not found"},
		{"controlling an ended session", "POST", "/v1/sessions/" + id + "/pause", op, ``, 409, "has ended"},
		{"an empty reply", "POST", "/v1/sessions/" + id + "/reply", op, `{"text":""}`, 400, "reply is empty"},
		{"a bad after", "GET", "/v1/sessions/" + id + "/events?after=-3", op, "", 400, "sequence number"},
		{"wrong method", "PUT", "/v1/sessions", op, "", 405, "not allowed"},
		{"no such endpoint", "GET", "/v2/things", op, "", 404, "no such endpoint"},
		{"a decision without approve", "POST", "/v1/sessions/" + id + "/approvals/c1", op, `{}`, 400, `true or false`},
	}
	for _, c := range cases {
		code, out, hdr := a.do(c.method, c.path, c.key, c.body)
		if code != c.status || !strings.Contains(out, c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, code, out, c.status, c.says)
		}
		if code >= 400 && hdr.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: Content-Type %q", c.name, hdr.Get("Content-Type"))
		}
	}
	// Nothing changed: acme has its one session, globex none.
	_, out, _ := a.do("GET", "/v1/sessions", op, "")
	if strings.Count(out, `"id"`) != 1 {
		t.Fatalf("acme's sessions after bad requests: %s", out)
	}
	_, out, _ = a.do("GET", "/v1/sessions", other, "")
	if !strings.Contains(out, `"sessions":[]`) {
		t.Fatalf("globex sees: %s", out)
	}
}

func TestCreateShapesAndIdempotency(t *testing.T) {
	a := newAPI(t, false)
	for _, body := range []string{
		`{"task":"say hi","labels":{"team":"a"}}`,
		`{"messages":[{"role":"user","content":"say hi"}]}`,
		`{"system_prompt":"You are terse.","user_message":"say hi","mode":"flash"}`,
	} {
		id := a.create("", body)
		a.waitStatus("", id, "completed")
	}
	first := a.create("", `{"task":"once"}`)
	code, out, _ := a.do("POST", "/v1/sessions", "", `{"task":"once"}`, "Idempotency-Key", "k-1")
	if code != 201 {
		t.Fatalf("with a key: %d %s", code, out)
	}
	code, again, _ := a.do("POST", "/v1/sessions", "", `{"task":"once"}`, "Idempotency-Key", "k-1")
	if code != 200 || !strings.Contains(again, strings.Split(strings.Split(out, `"id":"`)[1], `"`)[0]) {
		t.Fatalf("replayed key: %d %s (first %s)", code, again, out)
	}
	_, list, _ := a.do("GET", "/v1/sessions?limit=2", "", "")
	if strings.Count(list, `"id"`) != 2 || !strings.Contains(list, "next_cursor") {
		t.Fatalf("first page: %s", list)
	}
	_ = first
}

// SSE: ids are sequence numbers, Last-Event-ID resumes without loss or
// repeat, and the stream ends after session.ended.
func TestEventStreamResumes(t *testing.T) {
	a := newAPI(t, false)
	slow := script(t, a.dir, "done", "100ms", "100ms", "100ms")
	id := a.create("", fmt.Sprintf(`{"task":"list","model":"script:%s"}`, slow))
	read := func(lastID string, stopAfter int) []string {
		req, _ := http.NewRequest("GET", a.url+"/v1/sessions/"+id+"/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
		}
		var ids []string
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				ids = append(ids, v)
				if len(ids) == stopAfter {
					return ids
				}
			}
		}
		return ids
	}
	first := read("", 4)
	rest := read(first[len(first)-1], 0)
	all := append(first, rest...)
	for i, v := range all {
		if v != fmt.Sprint(i+1) {
			t.Fatalf("ids %v: a gap or a repeat at %d", all, i)
		}
	}
	_, out, _ := a.do("GET", "/v1/sessions/"+id+"/events?after=2&limit=3", "", "")
	var page struct {
		Events []struct{ Seq int64 }
		Next   int64
	}
	json.Unmarshal([]byte(out), &page)
	if len(page.Events) != 3 || page.Events[0].Seq != 3 || page.Next != 5 {
		t.Fatalf("page: %s", out)
	}
	if len(all) < 10 || all[len(all)-1] != fmt.Sprint(len(all)) {
		t.Fatalf("the stream did not run to session.ended: %v", all)
	}
}

func TestControlsOverHTTP(t *testing.T) {
	a := newAPI(t, false)
	slow := script(t, a.dir, "done", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms")
	id := a.create("", fmt.Sprintf(`{"task":"list","model":"script:%s","max_iterations":20}`, slow))
	a.waitStatus("", id, "running")
	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/messages", "", `{"text":"look at docs"}`); code != 202 || !strings.Contains(out, "next step") {
		t.Fatalf("message: %d %s", code, out)
	}
	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/pause", "", `{"reason":"lunch"}`); code != 202 {
		t.Fatalf("pause: %d %s", code, out)
	}
	a.waitStatus("", id, "paused")
	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/resume", "", ``); code != 202 || !strings.Contains(out, `"status":"running"`) {
		t.Fatalf("resume: %d %s", code, out)
	}
	if code, out, _ := a.do("DELETE", "/v1/sessions/"+id, "", ""); code != 409 || !strings.Contains(out, "terminate it first") {
		t.Fatalf("delete while running: %d %s", code, out)
	}
	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/terminate", "", `{"reason":"different_approach"}`); code != 202 {
		t.Fatalf("terminate: %d %s", code, out)
	}
	a.waitStatus("", id, "terminated")
	_, st, _ := a.do("GET", "/v1/sessions/"+id, "", "")
	if !strings.Contains(st, `"reason":"different_approach"`) {
		t.Fatalf("state: %.400s", st)
	}
	if _, ev, _ := a.do("GET", "/v1/sessions/"+id+"/events?limit=1000", "", ""); !strings.Contains(ev, `"content":"look at docs"`) {
		t.Fatal("the message is not in the log")
	}
	if code, _, _ := a.do("DELETE", "/v1/sessions/"+id, "", ""); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	if code, _, _ := a.do("GET", "/v1/sessions/"+id, "", ""); code != 404 {
		t.Fatalf("after delete: %d", code)
	}
}

// The same log over a WebSocket: every event once, in order, from ?after=,
// and a normal close after session.ended.
func TestEventsOverWebSocket(t *testing.T) {
	a := newAPI(t, false)
	slow := script(t, a.dir, "done", "50ms", "50ms")
	id := a.create("", fmt.Sprintf(`{"task":"list","model":"script:%s"}`, slow))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http")+"/v1/sessions/"+id+"/events?after=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	var seqs []int64
	toolCalls := 0
	for {
		var msg struct {
			Type string
			Seq  int64
		}
		if err := wsjson.Read(ctx, conn, &msg); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("read: %v (after %v)", err, seqs)
			}
			break
		}
		if msg.Type == "delta" {
			continue
		}
		if msg.Type == "tool_call" {
			toolCalls++
			continue
		}
		seqs = append(seqs, msg.Seq)
	}
	for i, s := range seqs {
		if s != int64(i+2) {
			t.Fatalf("seqs %v", seqs)
		}
	}
	if len(seqs) < 8 {
		t.Fatalf("only %v", seqs)
	}
	if toolCalls != 2 {
		t.Fatalf("%d tool_call timeline lines, want one per tool call (2)", toolCalls)
	}
	// Refusals happen before the upgrade, as HTTP.
	if _, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http")+"/v1/sessions/nosuch/events", nil); err == nil || resp == nil || resp.StatusCode != 404 {
		t.Fatalf("unknown session over websocket: %v %v", err, resp)
	}
}

// A dashboard's stream shows its tenant's sessions as they change, and
// nothing of another tenant's.
func TestTenantSummaryStream(t *testing.T) {
	a := newAPI(t, true)
	op, other := a.keys["operator@acme"], a.keys["operator@globex"]
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+op)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// globex's session first: its events reach the writer before acme's
	// session ends the watch.
	theirs := a.create(other, `{"task":"say hi"}`)
	a.waitStatus(other, theirs, "completed")
	mine := a.create(op, `{"task":"say hi"}`)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if strings.Contains(data, theirs) {
			t.Fatalf("acme saw globex's session: %s", data)
		}
		if strings.Contains(data, mine) && strings.Contains(data, `"status":"completed"`) {
			return
		}
	}
	t.Fatalf("the stream ended before acme's session completed: %v", sc.Err())
}

func TestMetrics(t *testing.T) {
	a := newAPI(t, false)
	id := a.create("", `{"task":"say hi"}`)
	a.waitStatus("", id, "completed")
	wants := []string{`agentloop_sessions{status="completed"} 1`, "agentloop_session_iterations 1", `agentloop_http_requests_total{code="2xx"}`, "agentloop_event_streams 0",
		`agentloop_model_calls_total{agentloop_outcome="ok",gen_ai_operation_name="chat"`, "agentloop_iterations_total 1", "agentloop_events_total 5",
		"agentloop_event_commit_lag_seconds_count 5", `gen_ai_client_token_usage_bucket{gen_ai_operation_name="chat"`}
	// Events are measured on the telemetry observer's goroutine after
	// their commit, not before the session's status shows: read the
	// metrics until they have caught up (or a deadline passes).
	var out string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var code int
		var hdr http.Header
		code, out, hdr = a.do("GET", "/metrics", "", "")
		if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
			t.Fatalf("%d %s", code, hdr.Get("Content-Type"))
		}
		if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(out, w) }) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q:\n%s", want, out)
		}
	}
	k := newAPI(t, true)
	if code, _, _ := k.do("GET", "/metrics", k.keys["operator@acme"], ""); code != 403 {
		t.Fatalf("an operator key read the server's metrics: %d", code)
	}
}

// The OpenAPI document is served, and documents every route the server has.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	a := newAPI(t, false)
	code, out, _ := a.do("GET", "/v1/openapi.json", "", "")
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &doc) != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("%d %.200s", code, out)
	}
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`HandleFunc\("([A-Z]+) ([^"]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 15 {
		t.Fatalf("found only %d routes in server.go", len(routes))
	}
	for _, r := range routes {
		ops, ok := doc.Paths[r[2]]
		if !ok {
			t.Errorf("route %s %s is not in openapi.json", r[1], r[2])
			continue
		}
		if _, ok := ops[strings.ToLower(r[1])]; !ok {
			t.Errorf("route %s %s: openapi.json lacks the %s operation", r[1], r[2], r[1])
		}
	}
}

func TestQuotaRefusesWithRetryAfter(t *testing.T) {
	a := newAPI(t, true)
	// A second server on the same store, with a quota of one running session.
	svc, err := service.New(service.Config{Store: a.st, Runner: (&assemble.Resolver{}).RunnerConfig(a.st, price.Default())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	h := server.New(server.Config{Service: svc, Keys: a.st, RequireKeys: true, Quotas: server.Quotas{Running: 1},
		Defaults: server.Defaults{Approval: "auto", Workspaces: filepath.Join(a.dir, "ws"), AllowScripts: true}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	q := &api{t: t, url: srv.URL, keys: a.keys}
	op := a.keys["operator@acme"]
	slow := script(t, a.dir, "done", "300ms", "300ms", "300ms")
	id := q.create(op, fmt.Sprintf(`{"task":"slow","model":"script:%s"}`, slow))
	code, out, hdr := q.do("POST", "/v1/sessions", op, fmt.Sprintf(`{"task":"another","model":"script:%s"}`, slow))
	if code != 429 || hdr.Get("Retry-After") == "" || !strings.Contains(out, "its limit") {
		t.Fatalf("over the quota: %d %s (Retry-After %q)", code, out, hdr.Get("Retry-After"))
	}
	// Another tenant has its own quota.
	if code, out, _ := q.do("POST", "/v1/sessions", a.keys["operator@globex"], fmt.Sprintf(`{"task":"x","model":"script:%s"}`, slow)); code != 201 {
		t.Fatalf("globex: %d %s", code, out)
	}
	q.waitStatus(op, id, "completed")
}

func TestPromptsAreVersionedAndRecorded(t *testing.T) {
	a := newAPI(t, true)
	op := a.keys["operator@acme"]
	secret, rec, _ := server.NewKey("acme", "admin", "test", time.Now())
	a.st.CreateKey(t.Context(), rec)
	if code, out, _ := a.do("PUT", "/v1/prompts/coder", op, `{"text":"You write code."}`); code != 403 {
		t.Fatalf("an operator editing prompts: %d %s", code, out)
	}
	for _, text := range []string{"You write code.", "You write careful code."} {
		if code, out, _ := a.do("PUT", "/v1/prompts/coder", secret, fmt.Sprintf(`{"text":%q}`, text)); code != 201 {
			t.Fatalf("put: %d %s", code, out)
		}
	}
	_, out, _ := a.do("GET", "/v1/prompts/coder?version=1", op, "")
	if !strings.Contains(out, `"text":"You write code."`) || !strings.Contains(out, `"version":1`) {
		t.Fatalf("version 1: %s", out)
	}
	id := a.create(op, `{"task":"say hi","prompt":"coder"}`)
	a.waitStatus(op, id, "completed")
	_, st, _ := a.do("GET", "/v1/sessions/"+id, op, "")
	if !strings.Contains(st, `"system_prompt":"You write careful code."`) || !strings.Contains(st, `"prompt":"coder@2"`) {
		t.Fatalf("session: %.500s", st)
	}
	if code, out, _ := a.do("POST", "/v1/sessions", a.keys["operator@globex"], `{"task":"x","prompt":"coder"}`); code != 404 {
		t.Fatalf("another tenant's prompt: %d %s", code, out)
	}
	// The admin makes a viewer key for its tenant; an operator cannot.
	if code, _, _ := a.do("POST", "/v1/keys", op, `{"role":"viewer"}`); code != 403 {
		t.Fatalf("an operator making keys: %d", code)
	}
	code, out, _ := a.do("POST", "/v1/keys", secret, `{"role":"viewer","name":"dashboard"}`)
	var k struct{ Key, Tenant string }
	if json.Unmarshal([]byte(out), &k); code != 201 || k.Tenant != "acme" {
		t.Fatalf("admin making a key: %d %s", code, out)
	}
	if code, _, _ := a.do("GET", "/v1/sessions/"+id, k.Key, ""); code != 200 {
		t.Fatalf("the new viewer key reading: %d", code)
	}
	if code, _, _ := a.do("POST", "/v1/sessions", k.Key, `{"task":"x"}`); code != 403 {
		t.Fatalf("the new viewer key starting: %d", code)
	}
	// The admin lists its tenant's keys (no secrets, no hashes, no other
	// tenant's) and revokes the new one: it stops working at once.
	code, out, _ = a.do("GET", "/v1/keys", secret, "")
	if code != 200 || !strings.Contains(out, `"name":"dashboard"`) || strings.Contains(out, "globex") ||
		strings.Contains(out, k.Key) || strings.Contains(out, "hash") {
		t.Fatalf("listing keys: %d %s", code, out)
	}
	var list struct{ Keys []struct{ ID, Name string } }
	json.Unmarshal([]byte(out), &list)
	var newID string
	for _, l := range list.Keys {
		if l.Name == "dashboard" {
			newID = l.ID
		}
	}
	if code, _, _ := a.do("GET", "/v1/keys", op, ""); code != 403 {
		t.Fatalf("an operator listing keys: %d", code)
	}
	if code, _, _ := a.do("DELETE", "/v1/keys/"+newID, a.keys["admin@globex"], ""); code != 404 {
		t.Fatalf("another tenant's admin revoking: %d", code)
	}
	if code, out, _ := a.do("DELETE", "/v1/keys/"+newID, secret, ""); code != 204 {
		t.Fatalf("revoking: %d %s", code, out)
	}
	if code, _, _ := a.do("GET", "/v1/sessions/"+id, k.Key, ""); code != 401 {
		t.Fatalf("a revoked key reading: %d", code)
	}
}

func TestPrune(t *testing.T) {
	a := newAPI(t, false)
	id := a.create("", `{"task":"say hi"}`)
	a.waitStatus("", id, "completed")
	if code, out, _ := a.do("DELETE", "/v1/sessions?ended_before=yesterday", "", ""); code != 400 {
		t.Fatalf("bad time: %d %s", code, out)
	}
	if _, out, _ := a.do("DELETE", "/v1/sessions?ended_before=720h", "", ""); !strings.Contains(out, `"deleted":[]`) {
		t.Fatalf("nothing that old: %s", out)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if _, out, _ := a.do("DELETE", "/v1/sessions?ended_before="+future, "", ""); !strings.Contains(out, id) {
		t.Fatalf("prune: %s", out)
	}
	if code, _, _ := a.do("GET", "/v1/sessions/"+id, "", ""); code != 404 {
		t.Fatalf("pruned session: %d", code)
	}
}

// A client that opens a stream and never reads it holds nothing up: other
// readers get every event and the session runs to its end.
func TestAStalledReaderDoesNotSlowAnything(t *testing.T) {
	a := newAPI(t, false)
	// 20 KB of ordinary words: a single 20,000-byte word is the token
	// counter's worst case, and under the race detector on a loaded
	// machine it alone took longer than a status wait.
	big := strings.Repeat("lorem ipsum ", 1700)
	var steps []string
	for i := range 20 {
		steps = append(steps, fmt.Sprintf(`{"text":%q,"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"x"}}]}`, fmt.Sprint(i)+big, i))
	}
	steps = append(steps, `{"text":"done"}`)
	path := filepath.Join(a.dir, "big.json")
	os.WriteFile(path, []byte(`{"steps":[`+strings.Join(steps, ",")+`]}`), 0o600)
	id := a.create("", fmt.Sprintf(`{"task":"talk a lot","model":"script:%s","max_iterations":30}`, path))
	// The stalled reader: a raw connection that asks and never reads.
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n", id)
	a.waitStatus("", id, "completed")
	_, out, _ := a.do("GET", "/v1/sessions/"+id+"/events?limit=1000", "", "")
	var page struct{ Events []struct{ Seq int64 } }
	json.Unmarshal([]byte(out), &page)
	if n := len(page.Events); n < 80 {
		_, st, _ := a.do("GET", "/v1/sessions/"+id, "", "")
		t.Fatalf("%d events; state %.300s", n, st[strings.Index(st, `"status"`):])
	}
	if code, _, _ := a.do("GET", "/healthz", "", ""); code != 200 {
		t.Fatal("the server stopped answering")
	}
}

func TestListFilters(t *testing.T) {
	a := newAPI(t, false)
	red := a.create("", `{"task":"a","labels":{"team":"red","env":"ci"},"workspace":"proj-a"}`)
	blue := a.create("", `{"task":"b","labels":{"team":"blue"},"workspace":"proj-b"}`)
	a.waitStatus("", red, "completed")
	a.waitStatus("", blue, "completed")
	ids := func(query string) string {
		_, out, _ := a.do("GET", "/v1/sessions?"+query, "", "")
		var page struct{ Sessions []struct{ ID string } }
		json.Unmarshal([]byte(out), &page)
		var got []string
		for _, s := range page.Sessions {
			got = append(got, s.ID)
		}
		return strings.Join(got, " ")
	}
	if got := ids("label=team=red"); got != red {
		t.Fatalf("team=red: %q", got)
	}
	if got := ids("label=team=red&label=env=prod"); got != "" {
		t.Fatalf("team=red, env=prod: %q", got)
	}
	if got := ids("workspace=proj-b"); got != blue {
		t.Fatalf("workspace proj-b: %q", got)
	}
	if got := ids("created_after=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); got != "" {
		t.Fatalf("created in the future: %q", got)
	}
	if code, _, _ := a.do("GET", "/v1/sessions?label=nokey", "", ""); code != 400 {
		t.Fatalf("a label without =: %d", code)
	}
}

func TestUsageAndVerification(t *testing.T) {
	a := newAPI(t, false)
	id := a.create("", `{"task":"say hi","verify":["true"]}`)
	a.waitStatus("", id, "completed")
	if _, out, _ := a.do("GET", "/v1/sessions/"+id+"/usage", "", ""); !strings.Contains(out, `"model_calls":1`) || !strings.Contains(out, `"iteration":1`) {
		t.Fatalf("usage: %s", out)
	}
	if _, out, _ := a.do("GET", "/v1/sessions/"+id+"/verification", "", ""); !strings.Contains(out, `"outcome":"pass"`) || !strings.Contains(out, `"commands":["true"]`) {
		t.Fatalf("verification: %s", out)
	}
}

func TestDiff(t *testing.T) {
	a := newAPI(t, false)
	path := filepath.Join(a.dir, "write.json")
	os.WriteFile(path, []byte(`{"steps":[{"tool_calls":[{"name":"write_file","arguments":{"path":"notes.txt","content":"hello\n"}}]},{"text":"wrote it"}]}`), 0o600)
	id := a.create("", fmt.Sprintf(`{"task":"write","model":"script:%s"}`, path))
	a.waitStatus("", id, "completed")
	_, out, _ := a.do("GET", "/v1/sessions/"+id+"/diff", "", "")
	if !strings.Contains(out, `"files":["notes.txt"]`) || !strings.Contains(out, `+hello`) {
		t.Fatalf("diff: %s", out)
	}
}

func TestCreateNarrowsTools(t *testing.T) {
	a := newAPI(t, false)
	id := a.create("", `{"task":"say hi","tools":["read_file","list_dir"]}`)
	a.waitStatus("", id, "completed")
	_, out, _ := a.do("GET", "/v1/sessions/"+id, "", "")
	if !strings.Contains(out, `"tools":["read_file","list_dir"]`) {
		t.Fatalf("tools: %.300s", out[strings.Index(out, `"tools"`):])
	}
}

// thinking is checked when a session is created and recorded with it.
func TestCreateWithThinking(t *testing.T) {
	a := newAPI(t, false)
	if code, out, _ := a.do("POST", "/v1/sessions", "", `{"task":"x","thinking":"a lot"}`); code != 400 || !strings.Contains(out, "use low, medium, high") {
		t.Fatalf("bad thinking: %d %s", code, out)
	}
	id := a.create("", `{"task":"say hi","thinking":"medium"}`)
	a.waitStatus("", id, "completed")
	evs, err := a.st.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if started := evs[0].Data.(*loop.SessionStarted); started.ModelOptions == nil || started.ModelOptions.Thinking != "medium" {
		t.Fatalf("recorded: %+v", started.ModelOptions)
	}
}
