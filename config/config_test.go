package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/prompt"
	"github.com/agentloop/agentloop/tool"
)

// builtins are the built-in tool names, as the CLI would pass them.
var builtins = []string{
	"read_file", "write_file", "edit_file", "delete_file", "list_dir", "search", "execute_command",
	"git_status", "git_log", "git_diff", "update_plan", "remember", "recall", "forget", "list_memory",
	"ask_user", "final_answer",
}

// writeConfig writes text as config.yaml in a new directory, with a
// prompt.md next to it, and returns the file's path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prompt.md"), []byte("You are a test."), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "srv"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExampleIsValid(t *testing.T) {
	if problems := Check("example.yaml", builtins); len(problems) > 0 {
		for _, p := range problems {
			t.Error(p)
		}
		t.FailNow()
	}
	c, err := Load("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.ProfileNames(), ","); got != "coder,reviewer" {
		t.Fatalf("profiles = %s", got)
	}
	p, err := c.Profile("")
	if err != nil || p.Name != "coder" {
		t.Fatalf("default profile = %q, %v", p.Name, err)
	}
	if p.Model != "openai/gpt-4.1-mini" || strings.Join(p.FallbackModels, ",") != "openai/gpt-4.1" || p.APIKeyEnv != "OPENAI_API_KEY" || len(p.Tools) != len(builtins) || len(p.Verify) != 2 {
		t.Errorf("coder = %+v", p)
	}
	if len(p.MCPServers) != 3 || p.MCPServers[0].Name != "github" || p.MCPServers[0].Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "${GITHUB_TOKEN}" || p.MCPServers[1].URL == "" || p.MCPServers[2].OAuth == nil {
		t.Errorf("mcp servers = %+v", p.MCPServers)
	}
	if !filepath.IsAbs(p.SystemPromptFile) || !filepath.IsAbs(c.DB) {
		t.Errorf("paths not absolute: %q, %q", p.SystemPromptFile, c.DB)
	}
	// The example prompt is a valid template.
	if _, err := prompt.Build(prompt.Data{Tools: []model.ToolSpec{{Name: "read_file", Description: "Read a file."}}}, prompt.Options{TemplatePath: p.SystemPromptFile}); err != nil {
		t.Errorf("example prompt: %v", err)
	}

	r, err := c.Profile("reviewer")
	if err != nil {
		t.Fatal(err)
	}
	// Merged from x-local-model.
	if r.Model != "ollama/qwen3:8b" || r.BaseURL != "http://localhost:11434" {
		t.Errorf("reviewer model = %q at %q", r.Model, r.BaseURL)
	}
	if r.Policy("write_file", tool.EffectWrite) != loop.PolicyDeny || r.Policy("read_file", tool.EffectRead) != loop.PolicyAuto {
		t.Errorf("reviewer approvals = %+v", r.Approvals)
	}
}

func TestEveryKeyIsDocumented(t *testing.T) {
	data, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range [][]string{topKeys, profileKeys, limitKeys, approvalKeys, mcpKeys} {
		for _, k := range keys {
			if !strings.Contains(string(data), k+":") {
				t.Errorf("example.yaml does not show %q", k)
			}
		}
	}
}

func TestProfileConversions(t *testing.T) {
	path := writeConfig(t, `
profiles:
  p:
    limits:
      max_iterations: 12
      timeout: 1h30m
      model_timeout: 90s
      tool_timeout: 0
      budget_tokens: 1000
      budget_usd: 0.5
      budget_tool_calls: 7
      max_tool_calls_per_turn: 3
      no_progress: 0
      on_stuck: end
      wrap_up: false
      stuck_headless: true
      condense: model
      condense_model: ollama/qwen3:0.6b
      max_output_tokens: 1500
    approvals:
      write: auto
      tools:
        execute_command: deny
        srv__thing: auto
    mcp_servers:
      srv:
        command: ./server
        cwd: srv
        reconnects: 0
      web:
        url: http://localhost:9000/mcp
        tool_prefix: ""
  empty: {}
  notools:
    tools: []
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Profile("p")
	f := false
	want := loop.Limits{MaxIterations: 12, Timeout: loop.Duration(90 * time.Minute), ModelCallTimeout: loop.Duration(90 * time.Second), BudgetTokens: 1000, BudgetUSD: 0.5, BudgetToolCalls: 7, MaxToolCallsPerTurn: 3, OnStuck: "end", WrapUp: &f}
	got := p.Limits()
	if got.WrapUp == nil || *got.WrapUp || got.MaxIterations != want.MaxIterations || got.Timeout != want.Timeout || got.ModelCallTimeout != want.ModelCallTimeout ||
		got.ToolCallTimeout != 0 || got.BudgetTokens != 1000 || got.BudgetUSD != 0.5 || got.BudgetToolCalls != 7 || got.MaxToolCallsPerTurn != 3 || got.NoProgressAfter != 0 || got.OnStuck != "end" ||
		!got.StuckHeadless || got.Condense != "model" || got.CondenseModel != "ollama/qwen3:0.6b" || got.MaxOutputTokens != 1500 {
		t.Errorf("Limits() = %+v", got)
	}
	// Settings lay over other defaults; what the profile sets wins, even 0.
	base := loop.Limits{MaxIterations: 15, NoProgressAfter: 5, ToolCallTimeout: loop.Duration(time.Minute), Timeout: loop.Duration(30 * time.Minute)}
	over := p.LimitSettings.Apply(base)
	if over.NoProgressAfter != 0 || over.ToolCallTimeout != 0 || over.MaxIterations != 12 {
		t.Errorf("Apply = %+v", over)
	}
	e, _ := c.Profile("empty")
	if n, _ := c.Profile("notools"); n.Tools == nil || len(n.Tools) != 0 || e.Tools != nil {
		t.Errorf("tools: [] gives %#v; no tools key gives %#v", n.Tools, e.Tools)
	}
	if got := e.LimitSettings.Apply(base); got != base {
		t.Errorf("empty profile changed the limits: %+v", got)
	}

	for _, tc := range []struct {
		name   string
		effect tool.Effect
		want   loop.Policy
	}{
		{"execute_command", tool.EffectExecute, loop.PolicyDeny}, // by name
		{"srv__thing", tool.EffectExecute, loop.PolicyAuto},      // MCP tool by name
		{"write_file", tool.EffectWrite, loop.PolicyAuto},        // by effect
		{"read_file", tool.EffectRead, loop.PolicyAuto},          // default
		{"git_commit", tool.EffectExecute, loop.PolicyAsk},       // default
		{"odd", "", loop.PolicyAsk},                              // unknown effect: execute
	} {
		if got := p.Policy(tc.name, tc.effect); got != tc.want {
			t.Errorf("Policy(%s, %s) = %s, want %s", tc.name, tc.effect, got, tc.want)
		}
	}
	if e.Policy("write_file", tool.EffectWrite) != loop.PolicyAsk || e.Policy("read_file", tool.EffectRead) != loop.PolicyAuto {
		t.Error("defaults by effect are wrong")
	}
	approve := p.ApprovalFunc()
	if approve(tool.Func(model.ToolSpec{Name: "execute_command"}, nil)) != loop.PolicyDeny {
		t.Error("ApprovalFunc does not use the tool's name")
	}

	if len(p.MCPServers) != 2 {
		t.Fatalf("mcp servers = %+v", p.MCPServers)
	}
	srv, web := p.MCPServers[0], p.MCPServers[1]
	if srv.Name != "srv" || srv.Command != "./server" || srv.Dir != filepath.Join(filepath.Dir(path), "srv") || srv.Reconnects != -1 {
		t.Errorf("srv = %+v", srv)
	}
	if web.Name != "web" || !web.NoPrefix || web.URL != "http://localhost:9000/mcp" || web.Reconnects != 0 {
		t.Errorf("web = %+v", web)
	}

	if _, err := c.Profile("pp"); err == nil || !strings.Contains(err.Error(), `no profile "pp"`) || !strings.Contains(err.Error(), `did you mean "p"?`) {
		t.Errorf("Profile(pp) = %v", err)
	}
	if p, err := c.Profile(""); err != nil || p.Name != "" {
		t.Errorf("Profile(\"\") without default_profile = %+v, %v", p, err)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	path := writeConfig(t, "profiles:\n  p:\n    modle: x\n    limits: {timeout: 5}\n")
	_, err = Load(path)
	var cerr *Error
	if !errors.As(err, &cerr) || len(cerr.Problems) != 2 {
		t.Fatalf("Load = %v", err)
	}
	want := path + `:3:5: unknown key "modle" in profile p; did you mean "model"?` + "\n" +
		path + `:4:23: profile p: limits.timeout 5 has no unit; write it like 5s or 5m`
	if err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
	if _, err := Load(writeConfig(t, "profiles:\n  p:\n    fallback_models: [gpt-4.1]\n")); err == nil || !strings.Contains(err.Error(), "fallback_models") {
		t.Errorf("a fallback model without its provider: %v", err)
	}
	if c, err := Load(writeConfig(t, "")); err != nil || len(c.Profiles) != 0 {
		t.Errorf("empty file: %+v, %v", c, err)
	}
	if c, err := Load(writeConfig(t, "# only a comment\n")); err != nil || len(c.Profiles) != 0 {
		t.Errorf("comment-only file: %+v, %v", c, err)
	}
	problems := Check(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "cannot read the file") {
		t.Errorf("Check(missing) = %v", problems)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("AGENTLOOP_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	if got := DefaultPath(); got != "/xdg/agentloop/config.yaml" {
		t.Errorf("DefaultPath = %q", got)
	}
	t.Setenv("AGENTLOOP_CONFIG", "/etc/agentloop.yaml")
	if got := DefaultPath(); got != "/etc/agentloop.yaml" {
		t.Errorf("DefaultPath = %q", got)
	}
}

// The built-in profiles are there without a config file, a file's own
// profile of the same name wins, and a file may name one as its default.
func TestBuiltinProfiles(t *testing.T) {
	var none *Config
	p, err := none.Profile("strict")
	if err != nil {
		t.Fatal(err)
	}
	l := p.Limits()
	if l.StuckRepeats != 3 || l.StuckErrorRepeats != 3 || !l.StuckNoNudge || l.OnStuck != "pause" || l.BudgetTokens != 50000 || l.Timeout.Std() != 10*time.Minute {
		t.Errorf("strict: %+v", l)
	}
	if _, err := none.Profile("strcit"); err == nil || !strings.Contains(err.Error(), `did you mean "strict"`) {
		t.Errorf("a misspelt built-in: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("default_profile: thorough\nprofiles:\n  strict:\n    limits:\n      max_iterations: 3\n"), 0o600)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Profile("strict"); p.Limits().MaxIterations != 3 || p.Limits().BudgetTokens != 0 {
		t.Errorf("the file's strict did not replace the built-in: %+v", p.Limits())
	}
	if p, _ := c.Profile(""); p.Name != "thorough" || p.Limits().MaxIterations != 20 {
		t.Errorf("default_profile thorough: %+v", p)
	}
}
