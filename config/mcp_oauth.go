package config

import (
	"go.yaml.in/yaml/v3"

	"github.com/agentloop/agentloop/tool/mcp"
)

// oauthKeys are the keys of an MCP server's oauth mapping.
var oauthKeys = []string{"client_id", "client_secret_env", "scopes"}

// mcpOAuth reads an MCP server's oauth: true (log in with a client
// registered dynamically) or a mapping of oauthKeys (a client registered
// in advance, and scopes). false or a null leaves OAuth off.
func (p *parser) mcpOAuth(v *yaml.Node, what string) *mcp.OAuth {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!bool" {
		if on, ok := p.boolean(v, what); ok && on {
			return &mcp.OAuth{}
		}
		return nil
	}
	if v.Kind != yaml.MappingNode {
		p.at(v, "%s must be true, or a mapping with %s, got %s", what, orList(oauthKeys), describe(v))
		return nil
	}
	o := &mcp.OAuth{}
	p.object(v, what, oauthKeys, func(k string, _, v *yaml.Node) {
		field := what + "." + k
		switch k {
		case "client_id":
			o.ClientID, _ = p.str(v, field)
		case "client_secret_env":
			if e, ok := p.str(v, field); ok {
				if !envName.MatchString(e) {
					p.at(v, "%s: %q is not an environment variable name (give the name, not the secret)", field, e)
				}
				o.ClientSecretEnv = e
			}
		case "scopes":
			o.Scopes, _, _ = p.strs(v, field, "[read, write]", p.str)
		}
	})
	if o.ClientSecretEnv != "" && o.ClientID == "" {
		p.at(v, "%s: client_secret_env needs a client_id (a client registered in advance)", what)
	}
	return o
}
