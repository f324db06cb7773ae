package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agentloop mcp --server relays to a server's /mcp, with $AGENTLOOP_KEY.
func TestMCPRelayToAServer(t *testing.T) {
	c := newCLI(t)
	secret, _ := c.key("acme", "operator")
	srv := c.serve("--auth", "keys", "--allow-script-models")
	hello := writeScript(t, `{"steps":[{"text":"hi through the server"}]}`)

	if _, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: func() *exec.Cmd {
		cmd := exec.Command(binary, "mcp", "--server", srv.url)
		cmd.Env = append(hermeticEnv(t), "AGENTLOOP_KEY=")
		return cmd
	}()}, nil); err == nil || !strings.Contains(err.Error(), "API key") {
		t.Fatalf("without a key: %v", err)
	}

	cs, _ := c.mcpStdio([]string{"AGENTLOOP_KEY=" + secret}, "--server", srv.url)
	s, msg := mcpCall(t, cs, "start_session", map[string]any{"task": "say hi", "model": "script:" + hello, "wait_seconds": 60})
	if msg != "" || s["status"] != "completed" || s["answer"] != "hi through the server" {
		t.Fatalf("start_session: %v %s", s, msg)
	}
	if code, out, _ := srv.send(t, request{method: "GET", path: "/v1/sessions/" + s["id"].(string), header: map[string]string{"Authorization": "Bearer " + secret}}); code != 200 || !strings.Contains(out, "hi through the server") {
		t.Errorf("the server has it: %d %s", code, out)
	}
}
