// Package config reads agentloop's configuration file: agent profiles
// (system prompt file, model, tools, limits, approval policies, verify
// commands, MCP servers) and a few global settings. The format is YAML;
// example.yaml in this directory documents every key.
//
// Check reports every mistake in a file at once, each with its line and
// column and, for misspelt keys and tool names, the closest known name.
// Load reads a file that must be free of mistakes.
package config

import (
	"errors"
	"fmt"
	"github.com/agentloop/agentloop/sandbox"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

// Config is a parsed configuration file.
type Config struct {
	// Path is the file's absolute path.
	Path string
	// DefaultProfile names the profile used when none is asked for.
	DefaultProfile string
	// DB is the SQLite database of sessions (absolute); empty means the
	// built-in default.
	DB string
	// Prices is a JSON price table file (absolute) extending the built-in
	// prices; empty means none.
	Prices   string
	Profiles map[string]Profile
	order    []string
}

// Profile is one agent profile. Unset fields mean "the built-in default,
// or what the command line says".
type Profile struct {
	Name        string
	Description string
	// SystemPromptFile is a prompt template file (absolute path).
	SystemPromptFile string
	// Model is PROVIDER/NAME (or script:PATH).
	Model   string
	BaseURL string
	// FallbackModels are the models (PROVIDER/NAME), in order, a session
	// moves to when its model keeps failing with errors a retry cannot
	// fix (404, 429 or 5xx after retries, context too long).
	FallbackModels []string
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string
	// NumCtx is Ollama's context window in tokens; zero means the
	// provider default (32768).
	NumCtx int
	// StreamTools streams Ollama replies to requests with tools (sent
	// with "stream": false by default).
	StreamTools bool
	// NoCheckpoints turns workspace checkpoints off for the profile's
	// sessions (checkpoints: false); they cannot be forked then.
	NoCheckpoints bool
	// Thinking lets a reasoning model think: low, medium, high or a token
	// budget.
	Thinking string
	// Tools lists the built-in tools to enable; nil means all of them
	// (an empty, non-nil list means none). MCP servers' tools come on top.
	Tools []string
	// LimitSettings are the limits the profile sets; see Limits.
	LimitSettings LimitSettings
	Approvals     Approvals
	// Verify commands run (through the shell) when the session ends.
	Verify     []string
	MCPServers []mcp.ServerConfig
	// Sandbox is the backend the profile's sessions run commands under
	// (landlock, bwrap, none); empty: the process's (--sandbox).
	Sandbox string
	// Network is the profile's network policy (none, full, or TCP ports);
	// it can only narrow what the process allows (--network).
	Network string
	// SandboxLimits are the resource limits of the profile's sandboxed
	// processes; a zero field keeps the process's (or the default).
	SandboxLimits sandbox.Limits
}

// LimitSettings are the limits a profile sets; nil means not set.
type LimitSettings struct {
	MaxIterations       *int
	Timeout             *time.Duration
	ModelTimeout        *time.Duration
	ToolTimeout         *time.Duration
	BudgetTokens        *int
	BudgetUSD           *float64
	BudgetToolCalls     *int
	MaxToolCallsPerTurn *int
	NoProgress          *int
	OnStuck             string // "", "pause" or "end"
	StuckErrorRepeats   *int
	StuckRepeats        *int
	StuckNudge          *bool
	StuckHeadless       *bool
	WrapUp              *bool
	// Condense is how dropped turns are summarised near the context
	// window: "digest" or "model"; CondenseModel the model that writes
	// the summary (PROVIDER/NAME or script:PATH; empty: the session's).
	Condense      string
	CondenseModel string
	// MaxOutputTokens caps each model call's output.
	MaxOutputTokens *int
}

// Apply returns base with every limit the profile sets replaced.
func (s LimitSettings) Apply(base loop.Limits) loop.Limits {
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	setD := func(dst *loop.Duration, v *time.Duration) {
		if v != nil {
			*dst = loop.Duration(*v)
		}
	}
	set(&base.MaxIterations, s.MaxIterations)
	setD(&base.Timeout, s.Timeout)
	setD(&base.ModelCallTimeout, s.ModelTimeout)
	setD(&base.ToolCallTimeout, s.ToolTimeout)
	set(&base.BudgetTokens, s.BudgetTokens)
	if s.BudgetUSD != nil {
		base.BudgetUSD = *s.BudgetUSD
	}
	set(&base.BudgetToolCalls, s.BudgetToolCalls)
	set(&base.MaxOutputTokens, s.MaxOutputTokens)
	set(&base.MaxToolCallsPerTurn, s.MaxToolCallsPerTurn)
	set(&base.NoProgressAfter, s.NoProgress)
	if s.OnStuck != "" {
		base.OnStuck = s.OnStuck
	}
	set(&base.StuckErrorRepeats, s.StuckErrorRepeats)
	set(&base.StuckRepeats, s.StuckRepeats)
	if s.StuckNudge != nil {
		base.StuckNoNudge = !*s.StuckNudge
	}
	if s.WrapUp != nil {
		v := *s.WrapUp
		base.WrapUp = &v
	}
	if s.StuckHeadless != nil {
		base.StuckHeadless = *s.StuckHeadless
	}
	if s.Condense != "" {
		base.Condense = s.Condense
	}
	if s.CondenseModel != "" {
		base.CondenseModel = s.CondenseModel
	}
	return base
}

// Limits returns the profile's limits; what it does not set is zero (the
// loop's defaults). Use LimitSettings.Apply to lay them over other
// defaults, such as the command line's.
func (p Profile) Limits() loop.Limits { return p.LimitSettings.Apply(loop.Limits{}) }

// Approvals are a profile's approval policies.
type Approvals struct {
	// ByEffect is the policy for tools of an effect (read, write,
	// execute) that Tools does not name.
	ByEffect map[tool.Effect]loop.Policy
	// Tools maps a tool name to its policy.
	Tools map[string]loop.Policy
}

// DefaultPolicy is the policy of a tool the configuration says nothing
// about: reading tools run, the others ask first.
func DefaultPolicy(effect tool.Effect) loop.Policy {
	if effect == tool.EffectRead {
		return loop.PolicyAuto
	}
	return loop.PolicyAsk
}

// Policy returns how a call to the named tool must be approved: the
// policy for the tool by name, else the one for its effect, else
// DefaultPolicy. An empty or unknown effect counts as execute.
func (p Profile) Policy(toolName string, effect tool.Effect) loop.Policy {
	if pol, ok := p.Approvals.Tools[toolName]; ok {
		return pol
	}
	if effect != tool.EffectRead && effect != tool.EffectWrite {
		effect = tool.EffectExecute
	}
	if pol, ok := p.Approvals.ByEffect[effect]; ok {
		return pol
	}
	return DefaultPolicy(effect)
}

// ApprovalFunc adapts Policy to loop.Config.Approval.
func (p Profile) ApprovalFunc() func(tool.Tool) loop.Policy {
	return func(t tool.Tool) loop.Policy { return p.Policy(t.Spec().Name, tool.EffectOf(t)) }
}

// ProfileNames lists the profiles in file order.
func (c *Config) ProfileNames() []string { return append([]string(nil), c.order...) }

// Profile returns the named profile. An empty name means the default
// profile, or, when the file names none, an empty profile (all built-in
// defaults).
func (c *Config) Profile(name string) (Profile, error) {
	if name == "" {
		if c == nil || c.DefaultProfile == "" {
			return Profile{}, nil
		}
		name = c.DefaultProfile
	}
	if c != nil {
		if p, ok := c.Profiles[name]; ok {
			return p, nil
		}
	}
	if p, ok := Builtin(name); ok {
		return p, nil
	}
	known := BuiltinNames()
	where := "built in"
	if c != nil && len(c.order) > 0 {
		known = append(append([]string(nil), c.order...), known...)
		where = "in " + c.Path + " or built in"
	}
	msg := fmt.Sprintf("no profile %q %s; profiles: %s", name, where, strings.Join(known, ", "))
	if s := suggest(name, known); s != "" {
		msg = fmt.Sprintf("no profile %q %s; did you mean %q? (profiles: %s)", name, where, s, strings.Join(known, ", "))
	}
	return Profile{}, errors.New(msg)
}

// Problem is one mistake in a configuration file.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`   // 1-based; 0 when unknown
	Column  int    `json:"column,omitempty"` // 1-based; 0 when unknown
	Message string `json:"message"`
}

func (p Problem) String() string {
	switch {
	case p.Line > 0 && p.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Message)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// Error is returned by Load for a file with mistakes; it lists them all.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// DefaultPath is $AGENTLOOP_CONFIG, else agentloop/config.yaml in the
// user's configuration directory ($XDG_CONFIG_HOME, else ~/.config).
func DefaultPath() string {
	if p := os.Getenv("AGENTLOOP_CONFIG"); p != "" {
		return p
	}
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(".config", "agentloop", "config.yaml")
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "agentloop", "config.yaml")
}

// Load reads and checks the file at path. A file that cannot be read
// gives its error (errors.Is(err, fs.ErrNotExist) for a missing one); a
// file with mistakes gives an *Error listing all of them. Tool names are
// not checked against the built-in tools: use Check for that.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, problems := Parse(path, data, nil)
	if len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	return c, nil
}

// Check reports every mistake in the file at path, sorted by position.
// knownTools are the built-in tool names that tools lists and approval
// policies may use (MCP tools are recognised by their server's prefix);
// nil skips that check.
func Check(path string, knownTools []string) []Problem {
	data, err := os.ReadFile(path)
	if err != nil {
		return []Problem{{File: path, Message: fmt.Sprintf("cannot read the file: %v", errors.Unwrap(err))}}
	}
	_, problems := Parse(path, data, knownTools)
	return problems
}

// Parse reads configuration text; path locates the file for messages and
// for relative paths inside it. The Config is nil when there are
// problems.
func Parse(path string, data []byte, knownTools []string) (*Config, []Problem) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	p := &parser{walker: walker{file: path}, dir: filepath.Dir(abs), known: knownTools}
	c := p.parse(data)
	c.Path = abs
	problems := p.problems
	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].Line != problems[j].Line {
			return problems[i].Line < problems[j].Line
		}
		return problems[i].Column < problems[j].Column
	})
	if len(problems) > 0 {
		return nil, problems
	}
	return c, nil
}
