package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/sqlite"
)

// demoAPI serves the API with keys required and a demo that starts a
// scripted session writing a file, as the caller of the request.
func demoAPI(t *testing.T) *api {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	resolver := &assemble.Resolver{}
	svc, err := service.New(service.Config{Store: st, Runner: resolver.RunnerConfig(st, price.Default())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	model := filepath.Join(dir, "demo.json")
	os.WriteFile(model, []byte(`{"steps":[{"tool_calls":[{"name":"write_file","arguments":{"path":"demo.txt","content":"hi\n"}}]},{"text":"demo done"}]}`), 0o600)
	h := server.New(server.Config{Service: svc, Keys: st, RequireKeys: true, Heartbeat: 50 * time.Millisecond, Demo: func(ctx context.Context, c service.Caller) (string, error) {
		ws, err := os.MkdirTemp(dir, "demo-")
		if err != nil {
			return "", err
		}
		s, err := svc.Start(ctx, c, loop.Task{Prompt: "the demo", Model: "script:" + model, Workspace: ws, Approval: "auto"})
		return s.ID, err
	}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a := &api{t: t, url: srv.URL, st: st, dir: dir, keys: map[string]string{}}
	for _, k := range []struct{ tenant, role string }{{"acme", "operator"}, {"acme", "viewer"}, {"globex", "operator"}} {
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

// A server with a demo says so, starts it for an operator (the session is
// the operator's tenant's and runs to the end), and refuses a viewer and a
// caller without a key; every answer matches the spec.
func TestDemoStartsForTheCaller(t *testing.T) {
	a := demoAPI(t)
	s := loadSpec(t, a)
	op := a.keys["operator@acme"]
	call := func(method, key string, want int) string {
		t.Helper()
		code, out, h := a.do(method, "/v1/demo", key, "")
		if code != want {
			t.Fatalf("%s /v1/demo: %d, want %d: %s", method, code, want, out)
		}
		s.check(method+" /v1/demo", code, h, out)
		return out
	}
	if out := call("GET", a.keys["viewer@acme"], 200); out != `{"enabled":true}`+"\n" {
		t.Fatalf("GET /v1/demo on a demo server: %q", out)
	}
	call("POST", a.keys["viewer@acme"], 403)
	call("POST", "", 401)
	var created struct{ ID, Status, URL string }
	if err := json.Unmarshal([]byte(call("POST", op, 201)), &created); err != nil || created.ID == "" || created.URL != "/v1/sessions/"+created.ID {
		t.Fatalf("created %+v, %v", created, err)
	}
	a.waitStatus(op, created.ID, "completed")
	// Another tenant does not see it; the viewer of its tenant does.
	if code, _, _ := a.do("GET", "/v1/sessions/"+created.ID, a.keys["operator@globex"], ""); code != 404 {
		t.Fatalf("another tenant reads the demo session: %d", code)
	}
	code, out, _ := a.do("GET", "/v1/sessions/"+created.ID, a.keys["viewer@acme"], "")
	if code != 200 || !json.Valid([]byte(out)) {
		t.Fatalf("the tenant's viewer: %d %s", code, out)
	}
	var st struct {
		Answer string `json:"answer"`
	}
	json.Unmarshal([]byte(out), &st)
	if st.Answer != "demo done" {
		t.Fatalf("demo session answer %q: %.500s", st.Answer, out)
	}
}

// A server without a demo says so, and POST /v1/demo is a 404 that names
// the flag.
func TestNoDemoWithoutTheFlag(t *testing.T) {
	a := newAPI(t, false)
	if code, out, _ := a.do("GET", "/v1/demo", "", ""); code != 200 || out != `{"enabled":false}`+"\n" {
		t.Fatalf("GET /v1/demo: %d %q", code, out)
	}
	code, out, _ := a.do("POST", "/v1/demo", "", "")
	if code != 404 || !json.Valid([]byte(out)) || !strings.Contains(out, "agentloop serve --demo") {
		t.Fatalf("POST /v1/demo without a demo: %d %s", code, out)
	}
}
