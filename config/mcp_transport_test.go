package config

import (
	"strings"
	"testing"

	"github.com/agentloop/agentloop/tool/mcp"
)

func TestMCPTransportAndBearerToken(t *testing.T) {
	cfg, problems := Parse("agentloop.yaml", []byte(`
profiles:
  p:
    mcp_servers:
      old:
        url: http://localhost:1/sse
        transport: sse
        bearer_token_env: OLD_TOKEN
      auto:
        url: http://localhost:2/mcp
`), nil)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	got := cfg.Profiles["p"].MCPServers
	if len(got) != 2 || got[0].Transport != mcp.TransportSSE || got[0].BearerTokenEnv != "OLD_TOKEN" || got[1].Transport != "" || got[1].BearerTokenEnv != "" {
		t.Fatalf("servers: %+v", got)
	}

	_, problems = Parse("agentloop.yaml", []byte(`
profiles:
  p:
    mcp_servers:
      a:
        url: http://localhost:1/mcp
        transport: websocket
        bearer_token_env: "sk-123 secret"
      b:
        url: http://localhost:1/mcp
        bearer_token_env: TOK
        headers: {Authorization: "Bearer x"}
      c:
        command: ./srv
        transport: sse
`), nil)
	wantProblems(t, problems,
		`mcp_servers.a.transport`,
		`"sk-123 secret" is not an environment variable name (give the name, not the token)`,
		`mcp_servers.b: set either an Authorization header or bearer_token_env, not both`,
		`transport is for servers reached by url; this one has a command`,
	)
}

// wantProblems fails t unless every want is part of some problem's text.
func wantProblems(t *testing.T, problems []Problem, wants ...string) {
	t.Helper()
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.String())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range wants {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
}
