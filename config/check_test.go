package config

import (
	"fmt"
	"strings"
	"testing"
)

// want is one expected problem: its position and a part of its message.
type want struct {
	line, col int
	msg       string
}

func TestCheckFindsEveryMistake(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []want
	}{
		// --- keys
		{"misspelt top-level key", `
defualt_profile: p
`, []want{{2, 1, `unknown key "defualt_profile" in the configuration; did you mean "default_profile"?`}}},
		{"misspelt profile key", `
profiles:
  p:
    modle: ollama/qwen3:8b
`, []want{{4, 5, `unknown key "modle" in profile p; did you mean "model"?`}}},
		{"misspelt limit key", `
profiles:
  p:
    limits:
      max_iteration: 5
`, []want{{5, 7, `unknown key "max_iteration" in profile p: limits; did you mean "max_iterations"?`}}},
		{"condense by an unknown way", `
profiles:
  p:
    limits:
      condense: modle
      condense_model: gpt-4.1-nano
`, []want{{5, 17, `profile p: limits.condense "modle": use digest or model (did you mean "model"?)`}, {6, 23, `profile p: limits.condense_model "gpt-4.1-nano": write it as PROVIDER/NAME`}}},
		{"camelCase key", `
profiles:
  p:
    limits:
      maxToolCallsPerTurn: 5
`, []want{{5, 7, `did you mean "max_tool_calls_per_turn"?`}}},
		{"prefix of a key", `
profiles:
  p:
    mcp:
      x: {command: y}
`, []want{{4, 5, `unknown key "mcp" in profile p; did you mean "mcp_servers"?`}}},
		{"unknown key far from any", `
profiles:
  p:
    colour: blue
`, []want{{4, 5, `unknown key "colour" in profile p; known keys: description, system_prompt_file, model`}}},
		{"repeated key", `
profiles:
  p:
    model: ollama/a
    model: ollama/b
`, []want{{5, 5, `key "model" is repeated (first at line 4); keep one`}}},
		{"api key in the file", `
profiles:
  p:
    api_key: sk-123
`, []want{{4, 5, `api_key is not allowed: keep keys out of config files; put the key in an environment variable and name the variable with api_key_env`}}},

		// --- types
		{"text for a number", `
profiles:
  p:
    limits:
      max_iterations: ten
`, []want{{5, 23, `profile p: limits.max_iterations must be a whole number, got the text "ten"`}}},
		{"quoted number", `
profiles:
  p:
    limits:
      budget_tokens: "1000"
`, []want{{5, 22, `must be a whole number, got the text "1000" (remove the quotes)`}}},
		{"fraction for a whole number", `
profiles:
  p:
    limits:
      budget_tool_calls: 2.5
`, []want{{5, 26, `budget_tool_calls must be a whole number, got the number 2.5`}}},
		{"yes for a bool", `
profiles:
  p:
    limits:
      wrap_up: yes
`, []want{{5, 16, `limits.wrap_up must be true or false, got the text "yes"`}}},
		{"mapping expected", `
profiles:
  p:
    limits: 5
`, []want{{4, 13, `profile p: limits must be a mapping (key: value lines), got the number 5`}}},
		{"list expected", `
profiles:
  p:
    tools: read_file
`, []want{{4, 12, `profile p: tools must be a list, like [read_file, search, execute_command]; got the text "read_file"`}}},
		{"number for text", `
profiles:
  p:
    model: 42
`, []want{{4, 12, `profile p: model must be text, got the number 42 (put it in quotes)`}}},
		{"profiles as a list", `
profiles:
  - p
`, []want{{3, 3, `profiles must be a mapping (key: value lines), got a list`}}},

		// --- values
		{"negative limits", `
profiles:
  p:
    limits:
      budget_tokens: -5
      budget_usd: -1.5
      timeout: -3m
`, []want{
			{5, 22, `limits.budget_tokens cannot be negative (got -5)`},
			{6, 19, `limits.budget_usd cannot be negative (got -1.5)`},
			{7, 16, `limits.timeout cannot be negative (got -3m)`},
		}},
		{"zero or negative iterations", `
profiles:
  p:
    limits:
      max_iterations: 0
  q:
    limits:
      max_iterations: -3
`, []want{
			{5, 23, `profile p: limits.max_iterations must be at least 1 (leave it out for the default, 15)`},
			{8, 23, `profile q: limits.max_iterations must be at least 1`},
		}},
		{"zero output tokens", `
profiles:
  p:
    limits:
      max_output_tokens: 0
`, []want{
			{5, 26, `profile p: limits.max_output_tokens must be at least 1 (leave it out for the provider's own cap)`},
		}},
		{"bad durations", `
profiles:
  p:
    limits:
      timeout: 5 minutes
      model_timeout: 30
      tool_timeout: [1m]
`, []want{
			{5, 16, `limits.timeout "5 minutes" is not a duration; write it like 90s, 5m or 1h30m`},
			{6, 22, `limits.model_timeout 30 has no unit; write it like 30s or 30m`},
			{7, 21, `limits.tool_timeout must be a duration like 90s, 5m or 1h30m, got a list`},
		}},
		{"on_stuck", `
profiles:
  p:
    limits:
      on_stuck: stop
`, []want{{5, 17, `limits.on_stuck "stop": use pause or end`}}},
		{"unknown policy", `
profiles:
  p:
    approvals:
      write: maybe
      read: aut
`, []want{
			{5, 14, `approvals.write "maybe": use auto, ask or deny`},
			{6, 13, `approvals.read "aut": use auto, ask or deny (did you mean "auto"?)`},
		}},
		{"tool policy in the wrong place", `
profiles:
  p:
    approvals:
      write_file: ask
`, []want{{5, 7, `"write_file" looks like a tool name; tool policies go under profile p: approvals.tools`}}},
		{"policy missing", `
profiles:
  p:
    approvals:
      tools:
        write_file:
`, []want{{6, 9, `approvals.tools.write_file: give a policy: auto, ask or deny`}}},
		{"model without provider", `
profiles:
  p:
    model: qwen3:8b
`, []want{{4, 12, `profile p: model "qwen3:8b": write it as PROVIDER/NAME, e.g. ollama/qwen3:8b`}}},
		{"model without name", `
profiles:
  p:
    model: openai/
`, []want{{4, 12, `the model name after "openai/" is missing`}}},
		{"unknown provider", `
profiles:
  p:
    model: olama/qwen3:8b
    base_url: localhost:11434
`, []want{
			{4, 12, `profile p: model: unknown provider "olama"; did you mean "ollama"?`},
			{5, 15, `profile p: base_url "localhost:11434" is not an http:// or https:// URL`},
		}},
		{"key instead of variable name", `
profiles:
  p:
    api_key_env: sk-proj-abc123
`, []want{{4, 18, `api_key_env must name an environment variable (like OPENAI_API_KEY), not hold the key itself`}}},
		{"missing files", `
prices: prices.json
profiles:
  p:
    system_prompt_file: prompts/missing.md
  q:
    system_prompt_file: srv
    model: script:nope.json
`, []want{
			{2, 9, `prices "prices.json" does not exist (looked for `},
			{5, 25, `profile p: system_prompt_file "prompts/missing.md" does not exist (looked for `},
			{7, 25, `system_prompt_file "srv" is a directory, not a file`},
			{8, 12, `profile q: model script "nope.json" does not exist`},
		}},
		{"default profile missing", `
default_profile: codr
profiles:
  coder: {}
  reviewer: {}
`, []want{{2, 18, `default_profile "codr" is not a profile; did you mean "coder"?`}}},
		{"default profile without profiles", `
default_profile: coder
`, []want{{2, 18, `default_profile "coder": there are no profiles; add it under profiles`}}},
		{"bad names", `
profiles:
  "my profile":
    model: ollama/x
  p:
    mcp_servers:
      "git hub":
        command: x
`, []want{
			{3, 3, `profile name "my profile": use letters, digits`},
			{7, 7, `server name "git hub": use letters, digits, '_' and '-'`},
		}},
		{"empty verify command", `
profiles:
  p:
    verify:
      - go test ./...
      - "  "
`, []want{{6, 9, `profile p: verify: a verify command is empty`}}},

		// --- tools
		{"unknown tool names", `
profiles:
  p:
    tools: [read_file, wirte_file, frobnicate, read_file]
    approvals:
      tools:
        git_stats: auto
`, []want{
			{4, 24, `profile p: tools: unknown tool "wirte_file"; did you mean "write_file"?`},
			{4, 36, `profile p: tools: unknown tool "frobnicate"; built-in tools: read_file, write_file, edit_file`},
			{4, 48, `profile p: tools: "read_file" is listed twice`},
			{7, 9, `profile p: approvals.tools: unknown tool "git_stats"; did you mean "git_status"?`},
		}},
		{"MCP tools in approvals", `
profiles:
  p:
    approvals:
      tools:
        github__create_issue: ask
        gh_search: auto
        githib__x: ask
    mcp_servers:
      github: {command: npx}
      other: {url: "http://localhost/mcp", tool_prefix: gh_}
`, []want{{8, 9, `unknown tool "githib__x"; built-in tools: read_file, `}}},

		// --- MCP servers
		{"MCP command and url", `
profiles:
  p:
    mcp_servers:
      both:
        command: npx
        url: http://localhost:1/mcp
      neither:
        effect: read
`, []want{
			{5, 7, `profile p: mcp_servers.both: set either command (stdio server) or url (streamable HTTP server), not both`},
			{8, 7, `profile p: mcp_servers.neither: give a command (stdio server) or a url (streamable HTTP server)`},
		}},
		{"MCP settings of the other kind", `
profiles:
  p:
    mcp_servers:
      local:
        command: ./srv
        headers: {X-Key: "${KEY}"}
      remote:
        url: https://example.com/mcp
        args: [-v]
        env: {A: b}
`, []want{
			{7, 9, `mcp_servers.local: headers is for servers reached by url; this one has a command`},
			{10, 9, `mcp_servers.remote: args is for servers started by a command; this one has a url`},
			{11, 9, `mcp_servers.remote: env is for servers started by a command; this one has a url`},
		}},
		{"MCP bad values", `
profiles:
  p:
    mcp_servers:
      s:
        command: ./srv
        cwd: nowhere
        effect: exec
        tool_effects: {a: read, b: delete}
        tool_prefix: "gh."
        reconnects: -1
        env: {"BAD-NAME": x}
      u:
        url: ftp://example.com
      e:
`, []want{
			{7, 14, `mcp_servers.s.cwd "nowhere" does not exist`},
			{8, 17, `mcp_servers.s.effect "exec": use read, write or execute (did you mean "execute"?)`},
			{9, 36, `mcp_servers.s.tool_effects.b "delete": use read, write or execute`},
			{10, 22, `mcp_servers.s.tool_prefix "gh.": use only letters, digits, '_' and '-'`},
			{11, 21, `mcp_servers.s.reconnects cannot be negative (got -1); 0 means never`},
			{12, 14, `mcp_servers.s.env: "BAD-NAME" is not an environment variable name`},
			{14, 14, `mcp_servers.u.url "ftp://example.com" is not an http:// or https:// URL`},
			{15, 7, `mcp_servers.e: give a command (stdio server) or a url (streamable HTTP server)`},
		}},

		// --- YAML itself
		{"syntax error", "profiles:\n  p:\n    model: a\n   tools: [x]\n", []want{{4, 0, `YAML syntax: `}}},
		{"tab indentation", "profiles:\n\tp: {}\n", []want{{2, 0, `(YAML does not allow tabs for indentation; use spaces)`}}},
		{"not a mapping", "- a\n- b\n", []want{{1, 1, `the configuration must be a mapping (key: value lines), got a list`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml)
			got := Check(path, builtins)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), list(got))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.File != path || g.Line != w.line || g.Column != w.col || !strings.Contains(g.Message, w.msg) {
					t.Errorf("problem %d = %d:%d %q\nwant %d:%d containing %q", i, g.Line, g.Column, g.Message, w.line, w.col, w.msg)
				}
			}
			if c, _ := Parse(path, []byte(tc.yaml), builtins); c != nil {
				t.Error("Parse returned a Config for a file with problems")
			}
		})
	}
}

func TestAllProblemsAtOnce(t *testing.T) {
	path := writeConfig(t, `
default_profile: nope
profiles:
  a:
    modle: x
    limits: {max_iterations: -1, timeout: soon}
  b:
    approvals: {execute: never}
    mcp_servers:
      s: {}
`)
	got := Check(path, builtins)
	want := []int{2, 5, 6, 6, 8, 10}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), list(got))
	}
	for i, line := range want {
		if got[i].Line != line {
			t.Errorf("problem %d on line %d, want %d: %s", i, got[i].Line, line, got[i])
		}
	}
}

func TestToolNamesUncheckedWithoutList(t *testing.T) {
	path := writeConfig(t, "profiles:\n  p:\n    tools: [anything]\n    approvals: {tools: {whatever: deny}}\n")
	if got := Check(path, nil); len(got) != 0 {
		t.Fatalf("problems without a tool list:\n%s", list(got))
	}
}

func TestAnchorsAndMerges(t *testing.T) {
	path := writeConfig(t, `
x-limits: &limits
  max_iterations: 8
  timeout: 10m
x-base: &base
  model: ollama/qwen3:8b
  limits: *limits
profiles:
  a:
    <<: *base
  b:
    <<: *base
    model: openai/gpt-4.1-mini
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Profiles["a"], c.Profiles["b"]
	if a.Model != "ollama/qwen3:8b" || b.Model != "openai/gpt-4.1-mini" {
		t.Errorf("models: a=%q b=%q", a.Model, b.Model)
	}
	if a.Limits().MaxIterations != 8 || b.Limits().Timeout.String() != "10m0s" {
		t.Errorf("limits: a=%+v b=%+v", a.Limits(), b.Limits())
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"max_iterations", "timeout", "model_timeout", "mcp_servers", "model"}
	for _, tc := range []struct{ in, want string }{
		{"max_iteration", "max_iterations"},
		{"MaxIterations", "max_iterations"},
		{"max-iterations", "max_iterations"},
		{"timout", "timeout"},
		{"mcp", "mcp_servers"},
		{"modl", "model"},
		{"modle", "model"},
		{"zebra", ""},
	} {
		if got := suggest(tc.in, keys); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func list(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %d:%d %s\n", p.Line, p.Column, p.Message)
	}
	return b.String()
}
