package server_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
)

// A server started without --allow-script-models refuses a scripted model
// wherever a request names a model — a session's, a fallback, a fork's —
// with 403 and the same words, before the path is looked at (its own
// default model, scripted or not, is still its own).
func TestScriptedModelsAreRefusedWhereverNamed(t *testing.T) {
	a := newAPI(t, true)
	svc, err := service.New(service.Config{Store: a.st, Runner: (&assemble.Resolver{}).RunnerConfig(a.st, price.Default())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	own := "script:" + script(t, a.dir, "hello")
	h := server.New(server.Config{Service: svc, Keys: a.st, RequireKeys: true,
		Defaults: server.Defaults{Approval: "auto", Workspaces: filepath.Join(a.dir, "ws"), Model: own}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	q := &api{t: t, url: srv.URL, keys: a.keys}
	op := a.keys["operator@acme"]
	const words = "scripted models (script:PATH) name a file of the server's and are refused unless the server was started with --allow-script-models"
	for _, c := range []struct{ path, body, prefix string }{
		{"/v1/sessions", `{"task":"x","model":"script:/etc/passwd"}`, ""},
		{"/v1/sessions", `{"task":"x","fallback_models":["openai/gpt-4.1","script:/etc/passwd"]}`, "fallback_models[1]: "},
		{"/v1/sessions/nosuchsession/fork", `{"at":1,"model":"script:/etc/passwd"}`, ""},
	} {
		code, out, _ := q.do("POST", c.path, op, c.body)
		if code != 403 || !strings.Contains(out, c.prefix+words) {
			t.Errorf("POST %s %s: %d %s", c.path, c.body, code, out)
		}
	}
	// The server's own model is allowed, though scripted.
	id := q.create(op, fmt.Sprintf(`{"task":"x","model":%q}`, own))
	q.waitStatus(op, id, "completed")
}
