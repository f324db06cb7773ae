package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestMCPOAuth(t *testing.T) {
	cfg, problems := Parse("agentloop.yaml", []byte(`
profiles:
  p:
    mcp_servers:
      dynamic:
        url: https://mcp.example.com/mcp
        oauth: true
      registered:
        url: https://mcp.example.org/mcp
        oauth:
          client_id: agentloop-cli
          client_secret_env: ORG_MCP_SECRET
          scopes: [read, write]
      off:
        url: https://mcp.example.net/mcp
        oauth: false
`), nil)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	got := cfg.Profiles["p"].MCPServers
	if len(got) != 3 {
		t.Fatalf("servers: %+v", got)
	}
	if o := got[0].OAuth; o == nil || o.ClientID != "" || o.Scopes != nil {
		t.Errorf("oauth: true = %+v", o)
	}
	if o := got[1].OAuth; o == nil || o.ClientID != "agentloop-cli" || o.ClientSecretEnv != "ORG_MCP_SECRET" || !slices.Equal(o.Scopes, []string{"read", "write"}) {
		t.Errorf("oauth mapping = %+v", o)
	}
	if got[2].OAuth != nil {
		t.Errorf("oauth: false = %+v", got[2].OAuth)
	}

	_, problems = Parse("agentloop.yaml", []byte(`
profiles:
  p:
    mcp_servers:
      a:
        command: ./srv
        oauth: true
      b:
        url: http://localhost:1/mcp
        oauth: true
        bearer_token_env: TOK
      c:
        url: http://localhost:1/mcp
        oauth: {client_secret_env: S, client: x}
      d:
        url: http://localhost:1/mcp
        oauth: yes please
      e:
        url: http://localhost:1/mcp
        headers: {authorization: "Bearer x"}
        oauth: true
`), nil)
	wantProblems(t, problems,
		`oauth is for servers reached by url; this one has a command`,
		`mcp_servers.b: set either oauth or bearer_token_env, not both`,
		`unknown key "client" in profile p: mcp_servers.c.oauth`,
		`mcp_servers.c.oauth: client_secret_env needs a client_id`,
		`mcp_servers.d.oauth must be true, or a mapping with client_id, client_secret_env or scopes`,
		`mcp_servers.e: set either oauth or an Authorization header, not both`,
	)
}

func TestOAuthKeysAreDocumented(t *testing.T) {
	data, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range oauthKeys {
		if !strings.Contains(string(data), k+":") {
			t.Errorf("example.yaml does not show oauth's %q", k)
		}
	}
}
