package config

import (
	"fmt"
	"github.com/agentloop/agentloop/sandbox"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

// The keys of each mapping, in the order example.yaml documents them.
var (
	topKeys          = []string{"default_profile", "db", "prices", "profiles"}
	profileKeys      = []string{"description", "system_prompt_file", "model", "fallback_models", "base_url", "api_key_env", "num_ctx", "stream_tools", "thinking", "tools", "limits", "approvals", "verify", "mcp_servers", "sandbox", "network", "sandbox_limits", "checkpoints"}
	sandboxLimitKeys = []string{"cpu_seconds", "address_space_mb", "processes", "file_size_mb", "open_files"}
	limitKeys        = []string{"max_iterations", "timeout", "model_timeout", "tool_timeout", "budget_tokens", "budget_usd", "budget_tool_calls", "max_tool_calls_per_turn", "no_progress", "on_stuck", "stuck_error_repeats", "stuck_repeats", "stuck_nudge", "stuck_headless", "wrap_up", "condense", "condense_model", "max_output_tokens"}
	approvalKeys     = []string{"read", "write", "execute", "tools"}
	mcpKeys          = []string{"command", "args", "env", "cwd", "url", "headers", "tool_prefix", "tools", "effect", "tool_effects", "reconnects", "connect_timeout", "transport", "bearer_token_env", "oauth"}
	policies         = []string{string(loop.PolicyAuto), string(loop.PolicyAsk), string(loop.PolicyDeny)}
	effects          = []string{string(tool.EffectRead), string(tool.EffectWrite), string(tool.EffectExecute)}
)

var (
	profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	serverName  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	prefixChars = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)
	envName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

type parser struct {
	walker
	dir   string   // directory of the file, for relative paths
	known []string // built-in tool names; nil: unchecked
}

// toolRef is a tool name used in a profile, checked once the profile's
// MCP servers are known.
type toolRef struct {
	name string
	node *yaml.Node
	what string
}

func (p *parser) parse(data []byte) *Config {
	c := &Config{Profiles: map[string]Profile{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.syntax(err, data)
		return c
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return c // an empty file is an empty configuration
	}
	root := resolve(doc.Content[0])
	var defaultNode *yaml.Node
	ps, ok := p.pairs(root, "the configuration")
	if !ok {
		return c
	}
	for _, kv := range ps {
		if strings.HasPrefix(kv.name, "x-") {
			continue // extension keys hold YAML anchors to reuse
		}
		if !contains(topKeys, kv.name) {
			p.unknownKey(kv.key, "the configuration", topKeys)
			continue
		}
		if isNull(kv.val) {
			continue
		}
		v := resolve(kv.val)
		switch kv.name {
		case "default_profile":
			if s, ok := p.str(v, "default_profile"); ok {
				c.DefaultProfile, defaultNode = s, v
			}
		case "db":
			if s, ok := p.str(v, "db"); ok {
				c.DB = p.path(s)
			}
		case "prices":
			if s, ok := p.str(v, "prices"); ok {
				c.Prices = p.existingFile(v, s, "prices")
			}
		case "profiles":
			p.profiles(v, c)
		}
	}
	if defaultNode != nil {
		_, builtin := Builtin(c.DefaultProfile)
		if _, ok := c.Profiles[c.DefaultProfile]; !ok && !builtin {
			p.missingProfile(defaultNode, c)
		}
	}
	return c
}

func (p *parser) missingProfile(n *yaml.Node, c *Config) {
	switch {
	case len(c.order) == 0:
		p.at(n, "default_profile %q: there are no profiles; add it under profiles", n.Value)
	case suggest(n.Value, c.order) != "":
		p.at(n, "default_profile %q is not a profile; did you mean %q?", n.Value, suggest(n.Value, c.order))
	default:
		p.at(n, "default_profile %q is not a profile; profiles: %s", n.Value, strings.Join(c.order, ", "))
	}
}

func (p *parser) profiles(n *yaml.Node, c *Config) {
	ps, ok := p.pairs(n, "profiles")
	if !ok {
		return
	}
	for _, kv := range ps {
		if !profileName.MatchString(kv.name) {
			p.at(kv.key, "profile name %q: use letters, digits, '_', '-' and '.', starting with a letter or digit", kv.name)
			continue
		}
		prof := Profile{Name: kv.name}
		if !isNull(kv.val) {
			p.profile(resolve(kv.val), &prof)
		}
		c.Profiles[kv.name] = prof
		c.order = append(c.order, kv.name)
	}
}

func (p *parser) profile(n *yaml.Node, prof *Profile) {
	what := "profile " + prof.Name
	var refs []toolRef
	p.object(n, what, profileKeys, func(key string, k, v *yaml.Node) {
		field := what + ": " + key
		switch key {
		case "description":
			prof.Description, _ = p.str(v, field)
		case "system_prompt_file":
			if s, ok := p.str(v, field); ok {
				prof.SystemPromptFile = p.existingFile(v, s, field)
			}
		case "model":
			if s, ok := p.str(v, field); ok {
				prof.Model = p.model(v, s, field)
			}
		case "fallback_models":
			names, nodes, _ := p.strs(v, field, "[openrouter/z-ai/glm-4.5-air:free]", p.str)
			prof.FallbackModels = []string{}
			for i, name := range names {
				if m := p.model(nodes[i], name, field); m != "" {
					prof.FallbackModels = append(prof.FallbackModels, m)
				}
			}
		case "base_url":
			if s, ok := p.str(v, field); ok {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					p.at(v, "%s %q is not an http:// or https:// URL", field, s)
				} else {
					prof.BaseURL = s
				}
			}
		case "api_key_env":
			if s, ok := p.str(v, field); ok {
				if !envName.MatchString(s) {
					p.at(v, "%s must name an environment variable (like OPENAI_API_KEY), not hold the key itself", field)
				} else {
					prof.APIKeyEnv = s
				}
			}
		case "num_ctx":
			if i, ok := p.integer(v, field); ok {
				if i < 256 {
					p.at(v, "%s must be a context size in tokens, at least 256 (leave it out for the default, 32768)", field)
				} else {
					prof.NumCtx = i
				}
			}
		case "stream_tools":
			if b, ok := p.boolean(v, field); ok {
				prof.StreamTools = b
			}
		case "checkpoints":
			if b, ok := p.boolean(v, field); ok {
				prof.NoCheckpoints = !b
			}
		case "thinking":
			if s, ok := p.str(v, field); ok {
				if _, _, err := provider.ParseThinking(s); err != nil {
					p.at(v, "%s: %v", field, err)
				} else {
					prof.Thinking = s
				}
			}
		case "tools":
			names, nodes, _ := p.strs(v, field, "[read_file, search, execute_command]", p.str)
			prof.Tools = []string{}
			seen := map[string]bool{}
			for i, name := range names {
				if seen[name] {
					p.at(nodes[i], "%s: %q is listed twice", field, name)
					continue
				}
				seen[name] = true
				prof.Tools = append(prof.Tools, name)
				if p.known != nil && !contains(p.known, name) {
					p.unknownTool(nodes[i], field, name, "")
				}
			}
		case "limits":
			p.limits(v, &prof.LimitSettings, what+": limits")
		case "approvals":
			refs = p.approvals(v, &prof.Approvals, what+": approvals")
		case "verify":
			cmds, nodes, _ := p.strs(v, field, `["go test ./...", "go vet ./..."]`, p.str)
			for i, c := range cmds {
				if strings.TrimSpace(c) == "" {
					p.at(nodes[i], "%s: a verify command is empty", field)
					continue
				}
				prof.Verify = append(prof.Verify, c)
			}
		case "mcp_servers":
			p.mcpServers(v, prof, what+": mcp_servers")
		case "sandbox":
			if s, ok := p.str(v, field); ok {
				if _, err := sandbox.ParseBackend(s); err != nil || s == "" {
					p.at(v, "%s %q: use landlock, bwrap or none", field, s)
				} else {
					prof.Sandbox = s
				}
			}
		case "sandbox_limits":
			p.sandboxLimits(v, &prof.SandboxLimits, field)
		case "network":
			if s, ok := p.str(v, field); ok {
				if _, err := sandbox.ParseNetwork(s); err != nil {
					p.at(v, "%s: %v", field, err)
				} else {
					prof.Network = s
				}
			}
		}
	})
	if p.known == nil {
		return
	}
	var prefixes []string
	for _, s := range prof.MCPServers {
		if s.NoPrefix {
			return // names without a prefix cannot be told apart from typos
		}
		prefixes = append(prefixes, mcpPrefix(s))
	}
	for _, r := range refs {
		if contains(p.known, r.name) || hasAnyPrefix(r.name, prefixes) {
			continue
		}
		hint := ""
		if len(prefixes) > 0 {
			hint = fmt.Sprintf("; MCP tools are named with their server's prefix (%s…)", strings.Join(prefixes, "…, "))
		}
		p.unknownTool(r.node, r.what, r.name, hint)
	}
}

func mcpPrefix(s mcp.ServerConfig) string {
	if s.Prefix != "" {
		return s.Prefix
	}
	return mcp.SanitizeName(s.Name) + "__"
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (p *parser) unknownTool(n *yaml.Node, what, name, hint string) {
	if s := suggest(name, p.known); s != "" {
		p.at(n, "%s: unknown tool %q; did you mean %q?%s", what, name, s, hint)
		return
	}
	p.at(n, "%s: unknown tool %q; built-in tools: %s%s", what, name, strings.Join(p.known, ", "), hint)
}

func (p *parser) model(n *yaml.Node, spec, what string) string {
	if path, ok := strings.CutPrefix(spec, "script:"); ok {
		if abs := p.existingFile(n, path, what+" script"); abs != "" {
			return "script:" + abs
		}
		return ""
	}
	prov, _, err := provider.Parse(spec)
	if err != nil || !strings.Contains(spec, "/") {
		msg := fmt.Sprintf("%q: write it as PROVIDER/NAME, e.g. %s", spec, provider.DefaultSpec)
		if err != nil {
			msg = strings.TrimPrefix(err.Error(), "model ")
		}
		p.at(n, "%s %s", what, msg)
		return ""
	}
	known := provider.Providers()
	if !contains(known, prov) {
		if s := suggest(prov, known); s != "" {
			p.at(n, "%s: unknown provider %q; did you mean %q?", what, prov, s)
		} else {
			p.at(n, "%s: unknown provider %q; providers: %s (or script:PATH)", what, prov, strings.Join(known, ", "))
		}
		return ""
	}
	return spec
}

// sandboxLimits reads the resource limits of a profile's sandboxed
// processes: whole numbers of at least 1; a key left out keeps the
// default.
func (p *parser) sandboxLimits(n *yaml.Node, l *sandbox.Limits, what string) {
	p.object(n, what, sandboxLimitKeys, func(key string, _, v *yaml.Node) {
		field := what + "." + key
		i, ok := p.integer(v, field)
		if !ok {
			return
		}
		if i < 1 {
			p.at(v, "%s must be at least 1 (leave it out for the default)", field)
			return
		}
		*map[string]*uint64{"cpu_seconds": &l.CPUSeconds, "address_space_mb": &l.AddressSpaceMB, "processes": &l.Processes,
			"file_size_mb": &l.FileSizeMB, "open_files": &l.OpenFiles}[key] = uint64(i)
	})
}

func (p *parser) limits(n *yaml.Node, l *LimitSettings, what string) {
	p.object(n, what, limitKeys, func(key string, _, v *yaml.Node) {
		field := what + "." + key
		intp := func() *int {
			if i, ok := p.count(v, field); ok {
				return &i
			}
			return nil
		}
		switch key {
		case "max_iterations":
			if i, ok := p.integer(v, field); ok {
				if i < 1 {
					p.at(v, "%s must be at least 1 (leave it out for the default, %d)", field, loop.DefaultMaxIterations)
				} else {
					l.MaxIterations = &i
				}
			}
		case "timeout", "model_timeout", "tool_timeout":
			if d, ok := p.duration(v, field); ok {
				switch key {
				case "timeout":
					l.Timeout = &d
				case "model_timeout":
					l.ModelTimeout = &d
				default:
					l.ToolTimeout = &d
				}
			}
		case "budget_tokens":
			l.BudgetTokens = intp()
		case "budget_usd":
			if f, ok := p.number(v, field); ok {
				l.BudgetUSD = &f
			}
		case "budget_tool_calls":
			l.BudgetToolCalls = intp()
		case "max_output_tokens":
			if i, ok := p.integer(v, field); ok {
				if i < 1 {
					p.at(v, "%s must be at least 1 (leave it out for the provider's own cap)", field)
				} else {
					l.MaxOutputTokens = &i
				}
			}
		case "max_tool_calls_per_turn":
			l.MaxToolCallsPerTurn = intp()
		case "no_progress":
			l.NoProgress = intp()
		case "on_stuck":
			if s, ok := p.str(v, field); ok {
				l.OnStuck = p.oneOf(v, s, field, []string{"pause", "end"})
			}
		case "wrap_up":
			if b, ok := p.boolean(v, field); ok {
				l.WrapUp = &b
			}
		case "stuck_error_repeats", "stuck_repeats":
			if i, ok := p.integer(v, field); ok {
				if i < 2 {
					p.at(v, "%s must be at least 2 (leave it out for the default: 3 for errors, 4 otherwise)", field)
				} else if key == "stuck_repeats" {
					l.StuckRepeats = &i
				} else {
					l.StuckErrorRepeats = &i
				}
			}
		case "stuck_nudge":
			if b, ok := p.boolean(v, field); ok {
				l.StuckNudge = &b
			}
		case "stuck_headless":
			if b, ok := p.boolean(v, field); ok {
				l.StuckHeadless = &b
			}
		case "condense":
			if s, ok := p.str(v, field); ok {
				l.Condense = p.oneOf(v, s, field, []string{loop.CondensedByDigest, loop.CondensedByModel})
			}
		case "condense_model":
			if s, ok := p.str(v, field); ok {
				l.CondenseModel = p.model(v, s, field)
			}
		}
	})
}

func (p *parser) oneOf(n *yaml.Node, s, what string, allowed []string) string {
	if contains(allowed, s) {
		return s
	}
	if sug := suggest(s, allowed); sug != "" {
		p.at(n, "%s %q: use %s (did you mean %q?)", what, s, orList(allowed), sug)
	} else {
		p.at(n, "%s %q: use %s", what, s, orList(allowed))
	}
	return ""
}

func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func (p *parser) policy(n *yaml.Node, what string) (loop.Policy, bool) {
	s, ok := p.str(n, what)
	if !ok {
		return "", false
	}
	s = p.oneOf(n, s, what, policies)
	return loop.Policy(s), s != ""
}

func (p *parser) approvals(n *yaml.Node, a *Approvals, what string) []toolRef {
	var refs []toolRef
	ps, ok := p.pairs(n, what)
	if !ok {
		return nil
	}
	for _, kv := range ps {
		if !contains(approvalKeys, kv.name) {
			if p.known != nil && contains(p.known, kv.name) || strings.Contains(kv.name, "__") {
				p.at(kv.key, "%s: %q looks like a tool name; tool policies go under %s.tools", what, kv.name, what)
			} else {
				p.unknownKey(kv.key, what, approvalKeys)
			}
			continue
		}
		if isNull(kv.val) {
			continue
		}
		v := resolve(kv.val)
		if kv.name != "tools" {
			if pol, ok := p.policy(v, what+"."+kv.name); ok {
				if a.ByEffect == nil {
					a.ByEffect = map[tool.Effect]loop.Policy{}
				}
				a.ByEffect[tool.Effect(kv.name)] = pol
			}
			continue
		}
		tools, ok := p.pairs(v, what+".tools")
		if !ok {
			continue
		}
		for _, t := range tools {
			refs = append(refs, toolRef{name: t.name, node: t.key, what: what + ".tools"})
			if isNull(t.val) {
				p.at(t.key, "%s.tools.%s: give a policy: %s", what, t.name, orList(policies))
				continue
			}
			if pol, ok := p.policy(resolve(t.val), what+".tools."+t.name); ok {
				if a.Tools == nil {
					a.Tools = map[string]loop.Policy{}
				}
				a.Tools[t.name] = pol
			}
		}
	}
	return refs
}

func (p *parser) mcpServers(n *yaml.Node, prof *Profile, what string) {
	ps, ok := p.pairs(n, what)
	if !ok {
		return
	}
	for _, kv := range ps {
		if !serverName.MatchString(kv.name) {
			p.at(kv.key, "%s: server name %q: use letters, digits, '_' and '-' (it becomes the tool name prefix)", what, kv.name)
			continue
		}
		s := mcp.ServerConfig{Name: kv.name}
		if isNull(kv.val) {
			p.at(kv.key, "%s.%s: give a command (stdio server) or a url (streamable HTTP server)", what, kv.name)
			continue
		}
		if p.mcpServer(kv.key, resolve(kv.val), &s, what+"."+kv.name) {
			prof.MCPServers = append(prof.MCPServers, s)
		}
	}
}

func (p *parser) mcpServer(key, n *yaml.Node, s *mcp.ServerConfig, what string) bool {
	before := len(p.problems)
	var stdioOnly, httpOnly []*yaml.Node
	var reconnects *int
	p.object(n, what, mcpKeys, func(k string, kn, v *yaml.Node) {
		field := what + "." + k
		switch k {
		case "command":
			if c, ok := p.str(v, field); ok {
				if strings.TrimSpace(c) == "" {
					p.at(v, "%s is empty", field)
				}
				s.Command = c
			}
		case "args":
			s.Args, _, _ = p.strs(v, field, `["-y", "@modelcontextprotocol/server-filesystem", "."]`, p.scalar)
			stdioOnly = append(stdioOnly, kn)
		case "env":
			s.Env = p.strMap(v, field)
			for _, name := range sortedKeys(s.Env) {
				if !envName.MatchString(name) {
					p.at(v, "%s: %q is not an environment variable name", field, name)
				}
			}
			stdioOnly = append(stdioOnly, kn)
		case "cwd":
			if d, ok := p.str(v, field); ok {
				s.Dir = p.existingDir(v, d, field)
			}
			stdioOnly = append(stdioOnly, kn)
		case "url":
			if u, ok := p.str(v, field); ok {
				if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
					p.at(v, "%s %q is not an http:// or https:// URL", field, u)
				}
				s.URL = u
			}
		case "headers":
			s.Headers = p.strMap(v, field)
			httpOnly = append(httpOnly, kn)
		case "transport":
			if t, ok := p.str(v, field); ok {
				s.Transport = p.oneOf(v, t, field, []string{mcp.TransportStreamable, mcp.TransportSSE})
			}
			httpOnly = append(httpOnly, kn)
		case "bearer_token_env":
			if e, ok := p.str(v, field); ok {
				if !envName.MatchString(e) {
					p.at(v, "%s: %q is not an environment variable name (give the name, not the token)", field, e)
				}
				s.BearerTokenEnv = e
			}
			httpOnly = append(httpOnly, kn)
		case "oauth":
			s.OAuth = p.mcpOAuth(v, field)
			httpOnly = append(httpOnly, kn)
		case "tool_prefix":
			if pre, ok := p.str(v, field); ok {
				if !prefixChars.MatchString(pre) {
					p.at(v, "%s %q: use only letters, digits, '_' and '-'", field, pre)
				} else if pre == "" {
					s.NoPrefix = true
				} else {
					s.Prefix = pre
				}
			}
		case "tools":
			s.Tools, _, _ = p.strs(v, field, "[search_issues, get_issue]", p.str)
		case "effect":
			if e, ok := p.str(v, field); ok {
				s.Effect = tool.Effect(p.oneOf(v, e, field, effects))
			}
		case "tool_effects":
			tps, ok := p.pairs(v, field)
			if !ok {
				return
			}
			s.ToolEffects = map[string]tool.Effect{}
			for _, t := range tps {
				if isNull(t.val) {
					p.at(t.key, "%s.%s: give an effect: %s", field, t.name, orList(effects))
					continue
				}
				if e, ok := p.str(resolve(t.val), field+"."+t.name); ok {
					if e = p.oneOf(resolve(t.val), e, field+"."+t.name, effects); e != "" {
						s.ToolEffects[t.name] = tool.Effect(e)
					}
				}
			}
		case "reconnects":
			if i, ok := p.integer(v, field); ok {
				if i < 0 {
					p.at(v, "%s cannot be negative (got %d); 0 means never", field, i)
				} else {
					reconnects = &i
				}
			}
		case "connect_timeout":
			s.ConnectTimeout, _ = p.duration(v, field)
		}
	})
	switch {
	case s.Command != "" && s.URL != "":
		p.at(key, "%s: set either command (stdio server) or url (streamable HTTP server), not both", what)
	case s.Command == "" && s.URL == "" && len(p.problems) == before:
		p.at(key, "%s: give a command (stdio server) or a url (streamable HTTP server)", what)
	case s.URL != "":
		for _, k := range stdioOnly {
			p.at(k, "%s: %s is for servers started by a command; this one has a url", what, k.Value)
		}
	case s.Command != "":
		for _, k := range httpOnly {
			p.at(k, "%s: %s is for servers reached by url; this one has a command", what, k.Value)
		}
	}
	for k := range s.Headers {
		if !strings.EqualFold(k, "Authorization") {
			continue
		}
		if s.BearerTokenEnv != "" {
			p.at(key, "%s: set either an Authorization header or bearer_token_env, not both", what)
		}
		if s.OAuth != nil {
			p.at(key, "%s: set either oauth or an Authorization header, not both", what)
		}
	}
	if s.OAuth != nil && s.BearerTokenEnv != "" {
		p.at(key, "%s: set either oauth or bearer_token_env, not both", what)
	}
	if reconnects != nil {
		if *reconnects == 0 {
			s.Reconnects = -1
		} else {
			s.Reconnects = *reconnects
		}
	}
	return len(p.problems) == before
}

// path makes a path from the file absolute: "~/" is the home directory,
// a relative path is relative to the file's directory.
func (p *parser) path(s string) string {
	if s == "~" || strings.HasPrefix(s, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			s = filepath.Join(home, strings.TrimPrefix(s, "~"))
		}
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(p.dir, s)
	}
	return filepath.Clean(s)
}

func (p *parser) existingFile(n *yaml.Node, s, what string) string {
	abs := p.path(s)
	st, err := os.Stat(abs)
	switch {
	case err != nil && os.IsNotExist(err):
		p.at(n, "%s %q does not exist (looked for %s)", what, s, abs)
	case err != nil:
		p.at(n, "%s %q: %v", what, s, err)
	case st.IsDir():
		p.at(n, "%s %q is a directory, not a file", what, s)
	default:
		return abs
	}
	return ""
}

func (p *parser) existingDir(n *yaml.Node, s, what string) string {
	abs := p.path(s)
	st, err := os.Stat(abs)
	switch {
	case err != nil && os.IsNotExist(err):
		p.at(n, "%s %q does not exist (looked for %s)", what, s, abs)
	case err != nil:
		p.at(n, "%s %q: %v", what, s, err)
	case !st.IsDir():
		p.at(n, "%s %q is not a directory", what, s)
	default:
		return abs
	}
	return ""
}
