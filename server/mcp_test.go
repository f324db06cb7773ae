package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
)

// bearer adds an API key to every request of an MCP client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpServer is a server with keys whose sessions ask before tools run
// (no --yes) and may use scripted models, over real HTTP.
func mcpServer(t *testing.T) (*api, string) {
	t.Helper()
	a := newAPI(t, true)
	svc, err := service.New(service.Config{Store: a.st, Runner: (&assemble.Resolver{}).RunnerConfig(a.st, price.Default())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	h := server.New(server.Config{Service: svc, Keys: a.st, RequireKeys: true,
		Defaults: server.Defaults{Approval: "ask", Workspaces: filepath.Join(a.dir, "ws"), AllowScripts: true, Model: "script:" + script(t, a.dir, "hello over MCP")}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL, st: a.st, dir: a.dir, keys: a.keys}, srv.URL + "/mcp"
}

func mcpClient(t *testing.T, endpoint, key string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{key}}, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var msg strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			msg.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return nil, msg.String()
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out, ""
}

func TestMCPOverHTTPWithKeys(t *testing.T) {
	a, endpoint := mcpServer(t)
	if _, err := mcpClient(t, endpoint, ""); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("without a key: %v", err)
	}
	if _, err := mcpClient(t, endpoint, "al_nonsense"); err == nil {
		t.Fatal("an unknown key connected")
	}
	op, err := mcpClient(t, endpoint, a.keys["operator@acme"])
	if err != nil {
		t.Fatal(err)
	}
	s, msg := callTool(t, op, "start_session", map[string]any{"task": "say hello", "wait_seconds": 60})
	if msg != "" || s["status"] != "completed" || s["answer"] != "hello over MCP" {
		t.Fatalf("start_session: %v %s", s, msg)
	}
	id := s["id"].(string)
	// The session is the tenant's, seen the same way over /v1.
	if code, out, _ := a.do("GET", "/v1/sessions/"+id, a.keys["viewer@acme"], ""); code != 200 || !strings.Contains(out, `"answer":"hello over MCP"`) {
		t.Errorf("GET /v1/sessions/%s: %d %.200s", id, code, out)
	}
	if !strings.HasPrefix(s["workspace"].(string), filepath.Join(a.dir, "ws", "tenants", "acme")) {
		t.Errorf("the session's workspace %v is not the tenant's", s["workspace"])
	}

	// The same refusals as POST /v1/sessions: no approval "auto" for an
	// operator of a server without --yes.
	if _, msg := callTool(t, op, "start_session", map[string]any{"task": "x", "approval": "auto"}); !strings.Contains(msg, `approval "auto" refused`) {
		t.Errorf("approval auto: %q", msg)
	}
	if _, msg := callTool(t, op, "start_session", map[string]any{"task": "x", "workspace": "../globex"}); msg == "" {
		t.Error("a workspace outside the tenant's was accepted")
	}

	viewer, err := mcpClient(t, endpoint, a.keys["viewer@acme"])
	if err != nil {
		t.Fatal(err)
	}
	if got, msg := callTool(t, viewer, "get_session", map[string]any{"id": id}); msg != "" || got["answer"] != "hello over MCP" {
		t.Errorf("a viewer reads: %v %s", got, msg)
	}
	if _, msg := callTool(t, viewer, "start_session", map[string]any{"task": "x"}); !strings.Contains(msg, "scope") {
		t.Errorf("a viewer starts: %q", msg)
	}
	if _, msg := callTool(t, viewer, "terminate_session", map[string]any{"id": id}); !strings.Contains(msg, "scope") {
		t.Errorf("a viewer terminates: %q", msg)
	}

	other, err := mcpClient(t, endpoint, a.keys["operator@globex"])
	if err != nil {
		t.Fatal(err)
	}
	if _, msg := callTool(t, other, "get_session", map[string]any{"id": id}); !strings.Contains(msg, "not found") {
		t.Errorf("another tenant's session: %q", msg)
	}
	if _, err := other.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "agentloop://sessions/" + id + "/events"}); err == nil {
		t.Error("another tenant read the session's log")
	}
	if list, _ := callTool(t, other, "list_sessions", nil); len(list["sessions"].([]any)) != 0 {
		t.Errorf("another tenant lists %v", list)
	}

	// An approval, decided over MCP; the file is written in the tenant's workspace.
	write := filepath.Join(a.dir, "write.json")
	os.WriteFile(write, []byte(`{"steps":[{"tool_calls":[{"name":"write_file","arguments":{"path":"n.txt","content":"hi"}}]},{"text":"written"}]}`), 0o600)
	s, msg = callTool(t, op, "start_session", map[string]any{"task": "write", "model": "script:" + write, "wait_seconds": 60})
	if msg != "" || s["status"] != "waiting" || len(s["pending_approvals"].([]any)) != 1 {
		t.Fatalf("before approval: %v %s", s, msg)
	}
	call := s["pending_approvals"].([]any)[0].(map[string]any)["call_id"]
	if _, msg := callTool(t, op, "decide_approval", map[string]any{"id": s["id"], "call_id": call, "approve": true}); msg != "" {
		t.Fatal(msg)
	}
	s, _ = callTool(t, op, "wait_session", map[string]any{"id": s["id"], "timeout_seconds": 60})
	if s["status"] != "completed" {
		t.Fatalf("after approval: %v", s)
	}
	if b, err := os.ReadFile(filepath.Join(s["workspace"].(string), "n.txt")); err != nil || string(b) != "hi" {
		t.Errorf("n.txt: %q %v", b, err)
	}

	// A revoked key stops working at its next call.
	keys, err := a.st.ListKeys(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Role == "viewer" {
			if err := a.st.DeleteKey(t.Context(), "acme", k.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if res, err := viewer.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_session", Arguments: map[string]any{"id": id}}); err == nil && !res.IsError {
		t.Error("a revoked key still reads")
	}
}

// The front door stands before /mcp as before /v1: a page on another
// site cannot call it, and a body must be JSON.
func TestMCPFrontDoor(t *testing.T) {
	a, _ := mcpServer(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, c := range []struct {
		hdr  []string
		want int
	}{
		{[]string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{[]string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{nil, http.StatusOK},
	} {
		hdr := append([]string{"Accept", "application/json, text/event-stream"}, c.hdr...)
		code, out, _ := a.do("POST", "/mcp", a.keys["operator@acme"], init, hdr...)
		if code != c.want {
			t.Errorf("%v: %d %.200s, want %d", c.hdr, code, out, c.want)
		}
	}
	if code, out, _ := a.do("POST", "/mcp", "", init, "Accept", "application/json, text/event-stream"); code != http.StatusUnauthorized {
		t.Errorf("without a key: %d %.200s", code, out)
	}
	if code, _, hdr := a.do("GET", "/mcp", a.keys["operator@acme"], ""); code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "POST" {
		t.Errorf("GET /mcp: %d Allow %q", code, hdr.Get("Allow"))
	}
}
