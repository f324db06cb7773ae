package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentloop/agentloop/notify"
)

// notInSpec are routes the server registers that are not the API: the
// catch-all that answers 404/405, and the dashboard's pages.
var notInSpec = map[string]string{
	"/":            "the catch-all: 404 or 405 as problem+json",
	"GET /{$}":     "the dashboard (only with a UI)",
	"GET /assets/": "the dashboard's files (only with a UI)",
}

// spec is the OpenAPI document the server serves, ready to validate
// response bodies against.
type spec struct {
	t   *testing.T
	doc map[string]any
	c   *jsonschema.Compiler
	// ops are the documented operations, "METHOD /path/{param}".
	ops map[string]bool
	// seen are the operations and statuses a response was checked for.
	seen map[string]map[int]bool
}

const specURL = "https://agentloop.invalid/openapi.json"

// loadSpec reads the document the server serves (the embedded one) and
// prepares it for validation. Response schemas are made closed for the
// test: an object schema that lists properties and says nothing of others
// gets additionalProperties: false, so a field the server adds but the
// spec does not describe fails here. Schemas that mean to be open say
// additionalProperties: true.
func loadSpec(t *testing.T, a *api) *spec {
	t.Helper()
	code, body, hdr := a.do("GET", "/v1/openapi.json", "", "")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /v1/openapi.json: %d %s", code, hdr.Get("Content-Type"))
	}
	onDisk, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, []byte(body)) {
		t.Fatal("the served document is not openapi.json")
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.(map[string]any)
	if m["openapi"] != "3.1.0" {
		t.Fatalf("openapi: %v", m["openapi"])
	}
	closeObjects(m)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(specURL, m); err != nil {
		t.Fatal(err)
	}
	s := &spec{t: t, doc: m, c: c, ops: map[string]bool{}, seen: map[string]map[int]bool{}}
	for path, item := range m["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			if method != "parameters" {
				s.ops[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	return s
}

func closeObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok && v["type"] == "object" {
			if _, set := v["additionalProperties"]; !set {
				v["additionalProperties"] = false
			}
			for _, p := range props {
				closeObjects(p)
			}
		}
		for k, x := range v {
			if k != "properties" {
				closeObjects(x)
			}
		}
	case []any:
		for _, x := range v {
			closeObjects(x)
		}
	}
}

func ptr(parts ...string) string {
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")
	}
	return "#/" + strings.Join(parts, "/")
}

// response finds the documented response of an operation for a status,
// following a $ref to components/responses, and the JSON pointer of the
// base of its location.
func (s *spec) response(op string, status int) (map[string]any, string) {
	s.t.Helper()
	method, path, _ := strings.Cut(op, " ")
	item, _ := s.doc["paths"].(map[string]any)[path].(map[string]any)
	o, _ := item[strings.ToLower(method)].(map[string]any)
	if o == nil {
		s.t.Fatalf("%s is not documented", op)
	}
	code := strconv.Itoa(status)
	r, ok := o["responses"].(map[string]any)[code].(map[string]any)
	if !ok {
		s.t.Errorf("%s answered %d, which the spec does not document", op, status)
		return nil, ""
	}
	at := ptr("paths", path, strings.ToLower(method), "responses", code)
	if ref, ok := r["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/responses/")
		r = s.doc["components"].(map[string]any)["responses"].(map[string]any)[name].(map[string]any)
		at = ptr("components", "responses", name)
	}
	return r, at
}

// check validates a response against the spec: its status is documented
// for the operation, its Content-Type is one documented, and a JSON body
// matches that content's schema.
func (s *spec) check(op string, status int, hdr http.Header, body string) {
	s.t.Helper()
	if s.seen[op] == nil {
		s.seen[op] = map[int]bool{}
	}
	s.seen[op][status] = true
	r, at := s.response(op, status)
	if r == nil {
		return
	}
	content, _ := r["content"].(map[string]any)
	if len(content) == 0 {
		if strings.TrimSpace(body) != "" {
			s.t.Errorf("%s %d: the spec documents no body, got %.200s", op, status, body)
		}
		return
	}
	mt := strings.TrimSpace(strings.Split(hdr.Get("Content-Type"), ";")[0])
	if _, ok := content[mt]; !ok {
		s.t.Errorf("%s %d: Content-Type %q is not documented (%v)", op, status, mt, slices.Sorted(func(yield func(string) bool) {
			for k := range content {
				if !yield(k) {
					return
				}
			}
		}))
		return
	}
	if mt != "application/json" && mt != "application/problem+json" {
		return
	}
	s.validate(specURL+at+"/content/"+strings.ReplaceAll(mt, "/", "~1")+"/schema", body, fmt.Sprintf("%s %d", op, status))
}

func (s *spec) validate(loc, body, what string) {
	s.t.Helper()
	sch, err := s.c.Compile(loc)
	if err != nil {
		s.t.Fatalf("%s: compile %s: %v", what, loc, err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		s.t.Errorf("%s: the body is not JSON: %v: %.200s", what, err, body)
		return
	}
	if err := sch.Validate(v); err != nil {
		s.t.Errorf("%s: the body does not match the spec: %v\nbody: %.600s", what, err, body)
	}
}

// registeredRoutes reads the patterns routes() in server.go registers.
func registeredRoutes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "server.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "routes" {
			continue
		}
		ast.Inspect(fn, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("a route registered with a pattern that is not a literal: %#v", call.Args[0])
				return true
			}
			p, _ := strconv.Unquote(lit.Value)
			out = append(out, p)
			return true
		})
	}
	if len(out) < 20 {
		t.Fatalf("found only %d routes in routes()", len(out))
	}
	return out
}

// The spec documents every route the server registers and nothing else,
// and every documented operation is served (not answered by the
// catch-all).
func TestOpenAPIMatchesTheRoutes(t *testing.T) {
	a := newAPI(t, false)
	s := loadSpec(t, a)
	registered := map[string]bool{}
	for _, p := range registeredRoutes(t) {
		if _, skip := notInSpec[p]; skip {
			continue
		}
		registered[p] = true
		if !s.ops[p] {
			t.Errorf("route %q is not in openapi.json", p)
		}
	}
	for op := range s.ops {
		if !registered[op] {
			t.Errorf("openapi.json documents %q, which routes() does not register", op)
		}
		method, path, _ := strings.Cut(op, " ")
		path = regexp.MustCompile(`\{[a-z]+\}`).ReplaceAllString(path, "nosuch")
		req, _ := http.NewRequestWithContext(t.Context(), method, a.url+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// Only the start of the body: a stream does not end.
		head := make([]byte, 512)
		n, _ := io.ReadAtLeast(resp.Body, head, 1)
		resp.Body.Close()
		if out := string(head[:n]); (resp.StatusCode == 404 && strings.Contains(out, "no such endpoint")) || resp.StatusCode == 405 {
			t.Errorf("%s: the catch-all answers it: %d %s", op, resp.StatusCode, out)
		}
	}
}

// Real requests through the real server, each response validated against
// the spec's schema for its operation and status; every documented
// operation is exercised.
func TestOpenAPIResponsesMatchTheSpec(t *testing.T) {
	a := newAPI(t, false)
	s := loadSpec(t, a)
	call := func(op, path, key, body string, want int, hdr ...string) string {
		t.Helper()
		method, _, _ := strings.Cut(op, " ")
		code, out, h := a.do(method, path, key, body, hdr...)
		if code != want {
			t.Errorf("%s %s: %d, want %d: %.300s", method, path, code, want, out)
		}
		s.check(op, code, h, out)
		return out
	}
	const (
		opCreate = "POST /v1/sessions"
		opGet    = "GET /v1/sessions/{id}"
		opEvents = "GET /v1/sessions/{id}/events"
	)

	// The system routes.
	call("GET /healthz", "/healthz", "", "", 200)
	call("GET /readyz", "/readyz", "", "", 200)
	call("GET /v1/openapi.json", "/v1/openapi.json", "", "", 200)
	call("GET /metrics", "/metrics", "", "", 200)
	call("GET /metrics", "/metrics", a.keys["operator@acme"], "", 403)
	// The demo, on a server without one (demo_test.go starts one).
	call("GET /v1/demo", "/v1/demo", "", "", 200)
	call("POST /v1/demo", "/v1/demo", "", "", 404)
	// MCP over streamable HTTP: one JSON-RPC exchange (mcp_test.go drives it with a client).
	call("POST /mcp", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"spec","version":"1"}}}`, 200,
		"Accept", "application/json, text/event-stream")
	call("POST /mcp", "/mcp", "al_nonsense", `{}`, 401)

	// A session that plans, remembers, writes a file and is verified.
	work := filepath.Join(a.dir, "work.json")
	os.WriteFile(work, []byte(`{"steps":[
		{"tool_calls":[{"name":"update_plan","arguments":{"action":"create","goal":"Write a note","steps":["Write notes.txt"]}}]},
		{"tool_calls":[{"name":"remember","arguments":{"key":"file","value":"notes.txt"}}]},
		{"tool_calls":[{"name":"write_file","arguments":{"path":"notes.txt","content":"hello\n"}}]},
		{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":1,"status":"completed","result":"written"}}]},
		{"text":"wrote it"}]}`), 0o600)
	out := call(opCreate, "/v1/sessions", "", fmt.Sprintf(`{"task":"write","model":"script:%s","verify":["true"],"labels":{"team":"docs"}}`, work), 201,
		"Idempotency-Key", "k1")
	var created struct{ ID string }
	json.Unmarshal([]byte(out), &created)
	id := created.ID
	call(opCreate, "/v1/sessions", "", fmt.Sprintf(`{"task":"write","model":"script:%s","verify":["true"],"labels":{"team":"docs"}}`, work), 200,
		"Idempotency-Key", "k1")
	call(opCreate, "/v1/sessions", "", `{"task":"another"}`, 422, "Idempotency-Key", "k1")
	a.waitStatus("", id, "completed")
	call(opGet, "/v1/sessions/"+id, "", "", 200)
	call("GET /v1/sessions/{id}/plan", "/v1/sessions/"+id+"/plan", "", "", 200)
	call("GET /v1/sessions/{id}/memory", "/v1/sessions/"+id+"/memory", "", "", 200)
	call("GET /v1/sessions/{id}/usage", "/v1/sessions/"+id+"/usage", "", "", 200)
	call("GET /v1/sessions/{id}/diff", "/v1/sessions/"+id+"/diff", "", "", 200)
	call("GET /v1/sessions/{id}/verification", "/v1/sessions/"+id+"/verification", "", "", 200)
	call("POST /v1/sessions/{id}/follow-up", "/v1/sessions/"+id+"/follow-up", "", "", 409) // it passed: nothing left
	call("POST /v1/sessions/{id}/follow-up", "/v1/sessions/"+id+"/follow-up", "", `{"task":"tidy up"}`, 201)
	types := eventTypes(t, call(opEvents, "/v1/sessions/"+id+"/events?limit=1000", "", "", 200))
	for _, want := range []string{"session.started", "plan.updated", "memory.set", "tool.finished", "verification.finished", "session.ended"} {
		if !types[want] {
			t.Errorf("the log lacks %s (has %v)", want, types)
		}
	}
	s.checkStream(a, "/v1/sessions/"+id+"/events", "")

	// A session that asks for approval, and the decision.
	ask := filepath.Join(a.dir, "ask.json")
	os.WriteFile(ask, []byte(`{"steps":[{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"a"}}]},{"text":"done"}]}`), 0o600)
	out = call(opCreate, "/v1/sessions", "", fmt.Sprintf(`{"task":"write","model":"script:%s","approval":"ask"}`, ask), 201)
	json.Unmarshal([]byte(out), &created)
	asked := created.ID
	var pending struct{ CallID, ArgsHash string }
	for deadline := time.Now().Add(time.Minute); pending.CallID == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, out, _ := a.do("GET", "/v1/sessions/"+asked+"/events?limit=1000", "", "")
		var page struct {
			Events []struct {
				Type string
				Data struct {
					CallID   string `json:"call_id"`
					ArgsHash string `json:"args_hash"`
				}
			}
		}
		json.Unmarshal([]byte(out), &page)
		for _, ev := range page.Events {
			if ev.Type == "approval.requested" {
				pending.CallID, pending.ArgsHash = ev.Data.CallID, ev.Data.ArgsHash
			}
		}
	}
	if pending.CallID == "" {
		t.Fatal("no approval was requested")
	}
	call(opGet, "/v1/sessions/"+asked, "", "", 200) // with a pending approval
	const opDecide = "POST /v1/sessions/{id}/approvals/{call}"
	call(opDecide, "/v1/sessions/"+asked+"/approvals/"+pending.CallID, "", `{"approve":true,"args_hash":"wrong"}`, 409)
	call(opDecide, "/v1/sessions/"+asked+"/approvals/"+pending.CallID, "", fmt.Sprintf(`{"approve":true,"args_hash":%q}`, pending.ArgsHash), 200)
	a.waitStatus("", asked, "completed")
	call("DELETE /v1/sessions/{id}/allowances/{hash}", "/v1/sessions/"+asked+"/allowances/"+pending.ArgsHash, "", "", 409) // it ended
	eventTypes(t, call(opEvents, "/v1/sessions/"+asked+"/events?limit=1000", "", "", 200))

	// The controls, on a slow session.
	slow := script(t, a.dir, "done", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms", "300ms")
	out = call(opCreate, "/v1/sessions", "", fmt.Sprintf(`{"task":"list","model":"script:%s","max_iterations":20}`, slow), 201)
	json.Unmarshal([]byte(out), &created)
	ctl := created.ID
	a.waitStatus("", ctl, "running")
	call("POST /v1/sessions/{id}/messages", "/v1/sessions/"+ctl+"/messages", "", `{"text":"look at docs"}`, 202)
	call("POST /v1/sessions/{id}/reply", "/v1/sessions/"+ctl+"/reply", "", `{"text":"and the tests"}`, 202)
	call("POST /v1/sessions/{id}/pause", "/v1/sessions/"+ctl+"/pause", "", `{"reason":"lunch"}`, 202)
	a.waitStatus("", ctl, "paused")
	call(opGet, "/v1/sessions/"+ctl, "", "", 200)
	call("POST /v1/sessions/{id}/resume", "/v1/sessions/"+ctl+"/resume", "", ``, 202)
	call("DELETE /v1/sessions/{id}", "/v1/sessions/"+ctl, "", "", 409)
	call("POST /v1/sessions/{id}/terminate", "/v1/sessions/"+ctl+"/terminate", "", `{"reason":"different_approach"}`, 202)
	a.waitStatus("", ctl, "terminated")
	call("POST /v1/sessions/{id}/terminate", "/v1/sessions/"+ctl+"/terminate", "", `{}`, 409)
	eventTypes(t, call(opEvents, "/v1/sessions/"+ctl+"/events?limit=1000", "", "", 200))

	// Lists, the summary stream, deleting and pruning.
	out = call("GET /v1/sessions", "/v1/sessions?limit=1", "", "", 200)
	if !strings.Contains(out, `"next_cursor"`) {
		t.Errorf("a full page without next_cursor: %s", out)
	}
	call("GET /v1/sessions", "/v1/sessions?status=completed&label=team%3Ddocs", "", "", 200)
	call("GET /v1/sessions", "/v1/sessions?limit=0", "", "", 400)
	if out := call("GET /v1/sessions", "/v1/sessions?unfinished=true&status=completed", "", "", 200); strings.Contains(out, `"status":"completed"`) {
		t.Errorf("unfinished sessions listed a completed one: %s", out)
	}
	call("GET /v1/sessions", "/v1/sessions?unfinished=maybe", "", "", 400)
	s.checkSummaries(a)
	call("DELETE /v1/sessions/{id}", "/v1/sessions/"+ctl, "", "", 204)
	call(opGet, "/v1/sessions/"+ctl, "", "", 404)
	call("DELETE /v1/sessions", "/v1/sessions?ended_before=1h", "", "", 200)
	call("DELETE /v1/sessions", "/v1/sessions?ended_before=soon", "", "", 400)

	// Prompts.
	call("PUT /v1/prompts/{name}", "/v1/prompts/coder", "", `{"text":"You write code."}`, 201)
	call("PUT /v1/prompts/{name}", "/v1/prompts/coder", a.keys["operator@acme"], `{"text":"You write code."}`, 403)
	call("GET /v1/prompts", "/v1/prompts", "", "", 200)
	call("GET /v1/prompts/{name}", "/v1/prompts/coder?version=1", "", "", 200)
	call("GET /v1/prompts/{name}", "/v1/prompts/coder?version=9", "", "", 404)

	// Keys.
	out = call("POST /v1/keys", "/v1/keys", "", `{"role":"viewer","name":"ci","tenant":"acme"}`, 201)
	var key struct{ ID string }
	json.Unmarshal([]byte(out), &key)
	call("POST /v1/keys", "/v1/keys", "", `{"role":"viewer"}`, 400)
	call("GET /v1/keys", "/v1/keys", "", "", 200)
	call("DELETE /v1/keys/{id}", "/v1/keys/"+key.ID, "", "", 204)
	call("DELETE /v1/keys/{id}", "/v1/keys/"+key.ID, "", "", 404)

	// The same log in other protocols: AG-UI and the AI SDK's UI message stream.
	call("GET /v1/sessions/{id}/agui", "/v1/sessions/"+id+"/agui", "", "", 200)
	call("GET /v1/sessions/{id}/agui", "/v1/sessions/no.such/agui", "", "", 400)
	call("GET /v1/sessions/{id}/ui-stream", "/v1/sessions/"+id+"/ui-stream", "", "", 200)
	call("GET /v1/sessions/{id}/ui-stream", "/v1/sessions/"+id+"/ui-stream?after=100000", "", "", 204)
	call("GET /v1/ui-stream/{id}/stream", "/v1/ui-stream/"+id+"/stream", "", "", 204)
	call("GET /v1/ui-stream/{id}/stream", "/v1/ui-stream/nosuch/stream", "", "", 404)
	call("POST /v1/agui", "/v1/agui", "", `{"threadId":"spec","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}`, 200)
	call("POST /v1/agui", "/v1/agui", "", `{"runId":"r1","messages":[]}`, 400)
	call("POST /v1/ui-stream", "/v1/ui-stream", "", `{"id":"spec","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`, 200)
	call("POST /v1/ui-stream", "/v1/ui-stream", "", `{"id":"spec","trigger":"regenerate-message","messages":[]}`, 409)

	// Notifications, on a server that sends them (webhooks_test.go); this
	// one sends none.
	call("GET /v1/webhooks", "/v1/webhooks", "", "", 404)
	hooks, _ := hookAPI(t, t.TempDir(), notify.Config{Secret: "s3cret"})
	hop := hooks.keys["operator@acme"]
	callHooks := func(op, path, key, body string, want int) string {
		t.Helper()
		method, _, _ := strings.Cut(op, " ")
		code, out, h := hooks.do(method, path, key, body)
		if code != want {
			t.Errorf("%s %s: %d, want %d: %.300s", method, path, code, want, out)
		}
		s.check(op, code, h, out)
		return out
	}
	out = callHooks("POST /v1/webhooks", "/v1/webhooks", hop, `{"url":"https://hooks.example.com/agentloop"}`, 201)
	var hook struct{ ID string }
	json.Unmarshal([]byte(out), &hook)
	callHooks("POST /v1/webhooks", "/v1/webhooks", hop, `{"url":"ftp://hooks.example.com"}`, 400)
	callHooks("GET /v1/webhooks", "/v1/webhooks", hop, "", 200)
	callHooks("GET /v1/webhooks", "/v1/webhooks", hooks.keys["viewer@acme"], "", 403)
	callHooks("DELETE /v1/webhooks/{id}", "/v1/webhooks/"+hook.ID, hop, "", 204)
	callHooks("DELETE /v1/webhooks/{id}", "/v1/webhooks/"+hook.ID, hop, "", 404)
	recv := newReceiver(t, "s3cret", 0)
	hooks.create(hop, fmt.Sprintf(`{"task":"hi","notify":%q}`, recv.srv.URL))
	awaitDelivery(t, hooks, hop, func(d delivery) bool { return d.Status == "delivered" })
	callHooks("GET /v1/webhooks/deliveries", "/v1/webhooks/deliveries?limit=10", hop, "", 200)
	callHooks("GET /v1/webhooks/deliveries", "/v1/webhooks/deliveries?limit=0", hop, "", 400)

	// Rewinds: this server keeps no checkpoints; one that does rewinds.
	const opRewind = "POST /v1/sessions/{id}/rewind"
	call(opRewind, "/v1/sessions/"+id+"/rewind", "", `{"at":1,"dry_run":true}`, 400)
	call(opRewind, "/v1/sessions/nosuch/rewind", "", `{"at":1}`, 404)
	rw := newRewindAPI(t, true)
	callRewind := func(path, body string, want int) {
		t.Helper()
		code, out, h := rw.do("POST", path, "", body)
		if code != want {
			t.Errorf("POST %s: %d, want %d: %.300s", path, code, want, out)
		}
		s.check(opRewind, code, h, out)
	}
	wrote := rw.create("", fmt.Sprintf(`{"task":"write","model":"script:%s","workspace":%q}`,
		writesScript(t, rw.dir, [2]string{"a.txt", "1"}, [2]string{"b.txt", "2"}), filepath.Join(rw.dir, "ws", "spec")))
	rw.waitStatus("", wrote, "completed")
	callRewind("/v1/sessions/"+wrote+"/rewind", `{"at":1,"dry_run":true}`, 200)
	callRewind("/v1/sessions/"+wrote+"/rewind", `{"at":1}`, 200)
	callRewind("/v1/sessions/"+wrote+"/rewind", `{"at":9}`, 400)
	rw.do("POST", "/v1/sessions/"+wrote+"/resume", "", "")
	rw.waitStatus("", wrote, "completed")
	_, evs, _ := rw.do("GET", "/v1/sessions/"+wrote+"/events?limit=1000", "", "")
	if types := eventTypes(t, evs); !types["session.rewound"] || !types["workspace.checkpointed"] {
		t.Errorf("the rewound session's log lacks session.rewound or workspace.checkpointed: %v", types)
	}
	s.checkStream(rw, "/v1/sessions/"+wrote+"/events", "")
	code, st, h := rw.do("GET", "/v1/sessions/"+wrote, "", "")
	s.check(opGet, code, h, st)

	// Forks and compare: this server keeps no checkpoints; the rewind
	// server does. Compare needs none.
	const opFork, opCompare = "POST /v1/sessions/{id}/fork", "GET /v1/sessions/compare"
	call(opFork, "/v1/sessions/"+id+"/fork", "", `{"at":1}`, 400)
	call(opFork, "/v1/sessions/nosuch/fork", "", `{"at":1}`, 404)
	call(opFork, "/v1/sessions/"+id+"/fork", "", `{"at":0}`, 400)
	call(opCompare, "/v1/sessions/compare?a="+id+"&b="+asked, "", "", 200)
	call(opCompare, "/v1/sessions/compare?a="+id, "", "", 400)
	call(opCompare, "/v1/sessions/compare?a="+id+"&b=nosuch", "", "", 404)
	callOn := func(a *api, op, path, body string, want int) string {
		t.Helper()
		method, _, _ := strings.Cut(op, " ")
		code, out, h := a.do(method, path, "", body)
		if code != want {
			t.Errorf("%s %s: %d, want %d: %.300s", method, path, code, want, out)
		}
		s.check(op, code, h, out)
		return out
	}
	out = callOn(rw, opFork, "/v1/sessions/"+wrote+"/fork", `{"at":1,"message":"again"}`, 201)
	json.Unmarshal([]byte(out), &created)
	rw.waitStatus("", created.ID, "completed")
	callOn(rw, opFork, "/v1/sessions/"+wrote+"/fork", `{"at":9}`, 400)
	callOn(rw, opGet, "/v1/sessions/"+created.ID, "", 200)
	callOn(rw, "GET /v1/sessions", "/v1/sessions?forked_from="+wrote, "", 200)
	callOn(rw, opCompare, "/v1/sessions/compare?a="+wrote+"&b="+created.ID, "", 200)
	s.checkStream(rw, "/v1/sessions/"+created.ID+"/events", "")

	// Problems every route can answer.
	call(opGet, "/v1/sessions/nosuch", "", "", 404)
	call(opGet, "/v1/sessions/no.such", "", "", 400)
	call(opCreate, "/v1/sessions", "Bearer-nonsense", `{"task":"x"}`, 401)
	call(opCreate, "/v1/sessions", a.keys["viewer@acme"], `{"task":"x"}`, 403)
	call(opCreate, "/v1/sessions", "", `{"task":"x","nonsense":1}`, 400)
	call(opCreate, "/v1/sessions", "", "task=x", 415, "Content-Type", "text/plain")
	call(opCreate, "/v1/sessions", "", `{"task":"`+strings.Repeat("x", 2<<20)+`"}`, 413)
	call(opEvents, "/v1/sessions/"+id+"/events?limit=0", "", "", 400)

	var missing []string
	for op := range s.ops {
		if len(s.seen[op]) == 0 {
			missing = append(missing, op)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("documented operations this test never exercises: %v", missing)
	}
}

// eventTypes are the types of an events page.
func eventTypes(t *testing.T, page string) map[string]bool {
	t.Helper()
	var p struct{ Events []struct{ Type string } }
	if err := json.Unmarshal([]byte(page), &p); err != nil {
		t.Fatalf("events: %v", err)
	}
	out := map[string]bool{}
	for _, ev := range p.Events {
		out[ev.Type] = true
	}
	return out
}

// checkStream reads an ended session's log as Server-Sent Events and
// validates every event's data against the Event schema.
func (s *spec) checkStream(a *api, path, key string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.url+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	s.check("GET /v1/sessions/{id}/events", resp.StatusCode, resp.Header, "")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n, event := 0, ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && event != "delta" && event != "tool_call" {
			s.validate(specURL+"#/components/schemas/Event", data, "SSE event "+event)
			n++
		}
	}
	if n == 0 {
		s.t.Errorf("%s: no events streamed", path)
	}
}

// checkSummaries reads the summary stream until a summary arrives, and
// validates it against the Summary schema.
func (s *spec) checkSummaries(a *api) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.url+"/v1/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	s.check("GET /v1/events", resp.StatusCode, resp.Header, "")
	id := a.create("", `{"task":"say hi"}`) // something to report
	defer a.waitStatus("", id, "completed")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "{}" {
			s.validate(specURL+"#/components/schemas/Summary", data, "the summary stream")
			return
		}
	}
	s.t.Errorf("no summary streamed: %v", sc.Err())
}
