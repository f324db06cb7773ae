package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
)

// sessionFlags are the flags shared by run and the commands that rebuild a
// session's runner (resume, reply, approve).
type sessionFlags struct {
	model         string
	fallbacks     string // --fallback-models, comma-separated
	baseURL       string
	apiKey        string
	numCtx        int
	contextWindow int
	streamTools   bool
	thinking      string
	dir           string
	db            string
	complexity    string
	agent         string
	configPath    string
	set           map[string]bool // flags given on the command line
	maxIterations int
	timeout       time.Duration
	modelTimeout  time.Duration
	toolTimeout   time.Duration
	budgetTokens  int
	budgetUSD     float64
	budgetTools   int
	maxPerTurn    int
	noProgress    int
	noWrapUp      bool
	onStuck       string
	yes           bool
	promptFile    string
	selfReasoning bool
	mode          string // tools, thinking, flash or self-reasoning
	messagesFile  string
	task          string // the task, for the system prompt (named files)
	marker        string
	quiet         bool
	verify        stringList
	labels        labelFlags
	protocol      string
	pricesFile    string // from the config file
	// answerSchemaFile is --answer-schema; answerSchema its content.
	answerSchemaFile string
	answerSchema     json.RawMessage
	maxOutputTokens  int
	sandboxFlags
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func (o *sessionFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.model, "model", os.Getenv("AGENTLOOP_MODEL"), "model as PROVIDER/NAME (ollama/qwen3:8b, openai/gpt-4.1-mini, anthropic/claude-sonnet-4-5, openrouter/…) or script:PATH; default ollama/qwen3:8b ($AGENTLOOP_MODEL)")
	fs.StringVar(&o.fallbacks, "fallback-models", "", "models (PROVIDER/NAME, comma-separated) a new session moves to, in order, when its model keeps failing with errors a retry cannot fix (404, 429 or 5xx after retries, context too long)")
	fs.StringVar(&o.baseURL, "base-url", "", "the provider's base URL (default: the provider's usual one)")
	fs.StringVar(&o.apiKey, "api-key", "", "API key (default: the provider's usual environment variable, e.g. OPENAI_API_KEY)")
	fs.IntVar(&o.numCtx, "num-ctx", 0, "Ollama's context window in tokens (options.num_ctx; default 32768)")
	fs.IntVar(&o.contextWindow, "context-window", 0, "the model's context window in tokens: near it the conversation is condensed (default: --num-ctx for Ollama, else unknown and never condensed)")
	fs.BoolVar(&o.streamTools, "stream-tools", false, "Ollama: stream replies even when tools are offered (default: \"stream\": false with tools)")
	fs.StringVar(&o.thinking, "thinking", "", "let a reasoning model think: low, medium, high, or a token budget (Anthropic extended thinking; reasoning_effort on OpenAI-compatible APIs; think on Ollama)")
	fs.StringVar(&o.dir, "dir", ".", "workspace directory the tools may read and change")
	fs.StringVar(&o.db, "db", defaultDB(), "session database: a SQLite file, or postgres://USER:PASS@HOST/DB ($AGENTLOOP_DB)")
	fs.StringVar(&o.complexity, "complexity", "", "iteration limit by task size: trivial (5), standard (10) or complex (20)")
	fs.StringVar(&o.agent, "profile", "", "agent profile from the config file (default: its default_profile), or built in: strict (stuck pauses at the third repeat, 50,000 tokens, 10 minutes), thorough (20 steps, 30 minutes)")
	fs.StringVar(&o.configPath, "config", "", "config file (default $AGENTLOOP_CONFIG or ~/.config/agentloop/config.yaml, when it exists)")
	fs.IntVar(&o.maxIterations, "max-iterations", 0, fmt.Sprintf("most model calls the session may make (default %d)", loop.DefaultMaxIterations))
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "wall-clock limit for the whole session")
	fs.DurationVar(&o.modelTimeout, "model-timeout", 5*time.Minute, "limit for one model call")
	fs.DurationVar(&o.toolTimeout, "tool-timeout", 0, "limit for one tool call (default: each tool's own, 2m for commands)")
	fs.IntVar(&o.budgetTokens, "budget-tokens", 0, "stop before the session would use more tokens than this (0: no limit)")
	fs.Float64Var(&o.budgetUSD, "budget-usd", 0, "stop before the session would cost more than this many US dollars (0: no limit)")
	fs.IntVar(&o.budgetTools, "budget-tool-calls", 0, "most tool calls in the session (0: no limit)")
	fs.IntVar(&o.maxOutputTokens, "max-output-tokens", 0, "most tokens one model reply may have (the request's max tokens; default: the provider's own, 4096 under a budget)")
	fs.StringVar(&o.answerSchemaFile, "answer-schema", "", "a JSON Schema file the final answer must match: the model is told it, a wrong answer is corrected once, a second one ends the session failed (invalid_answer); the answer is printed as JSON with --json (answer_json)")
	fs.IntVar(&o.maxPerTurn, "max-tool-calls-per-turn", 10, "most tool calls one reply may run; the excess is refused")
	fs.IntVar(&o.noProgress, "no-progress", 5, "stop after this many iterations without a workspace change (0: never; only when write tools are on)")
	fs.BoolVar(&o.noWrapUp, "no-wrap-up", false, "when a limit stops the session, skip the final tool-less call for a best-effort answer")
	fs.StringVar(&o.onStuck, "on-stuck", "pause", "what a second stuck detection does: pause (wait for a person) or end")
	fs.BoolVar(&o.yes, "yes", false, "approve every tool call (default: writing and executing tools ask first)")
	fs.StringVar(&o.promptFile, "system-prompt", "", "file with a system prompt template to use instead of the built-in one")
	fs.BoolVar(&o.selfReasoning, "self-reasoning", false, "same as --mode self-reasoning")
	fs.StringVar(&o.mode, "mode", "tools", "tools: the tool loop (default); thinking: the tool loop at 10 steps; flash: one call, no tools, its reply is the answer; self-reasoning: no tools, the model reasons over several iterations until it writes the completion marker")
	fs.StringVar(&o.messagesFile, "messages", "", "start from a conversation: a JSON file with an array of {role, content, tool_calls, tool_call_id} messages (OpenAI shape); a system message replaces the built-in prompt")
	fs.StringVar(&o.marker, "marker", loop.DefaultMarker, "completion marker for --self-reasoning")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress output")
	fs.StringVar(&o.protocol, "protocol", "", "run a protocol file (steps with required outputs), e.g. examples/protocols/project-map.json")
	o.sandboxFlags.register(fs, "full") // a developer's build needs modules
	fs.Var(&o.labels, "label", "a KEY=VALUE label for the session (repeatable); list by it with `sessions list --label KEY=VALUE`")
	fs.Var(&o.verify, "verify", "a command that checks the work (repeatable), e.g. --verify \"go test ./...\"; run when the model says it is done and when a limit ends the session")
}

func (o *sessionFlags) check() error {
	if o.complexity != "" {
		n, ok := loop.Profiles[o.complexity]
		if !ok {
			return fmt.Errorf("--complexity %q: use trivial, standard or complex", o.complexity)
		}
		if o.maxIterations == 0 {
			o.maxIterations = n
		}
	}
	if o.maxIterations < 0 || o.numCtx < 0 || o.contextWindow < 0 || o.budgetTokens < 0 || o.budgetUSD < 0 || o.budgetTools < 0 || o.maxPerTurn < 0 || o.noProgress < 0 || o.maxOutputTokens < 0 {
		return fmt.Errorf("limits cannot be negative")
	}
	if math.IsNaN(o.budgetUSD) || math.IsInf(o.budgetUSD, 0) {
		return fmt.Errorf("--budget-usd %v: give a number of US dollars, e.g. 0.50", o.budgetUSD)
	}
	if o.timeout < 0 || o.modelTimeout < 0 || o.toolTimeout < 0 {
		return fmt.Errorf("timeouts cannot be negative (0 means the default)")
	}
	switch o.mode {
	case "tools", "flash":
	case "thinking":
		if o.maxIterations == 0 {
			o.maxIterations = 10
		}
	case "self-reasoning", "self_reasoning":
		o.mode = "self-reasoning"
	default:
		return fmt.Errorf("--mode %q: use tools, thinking, flash or self-reasoning", o.mode)
	}
	if o.selfReasoning {
		o.mode = "self-reasoning"
	}
	if o.onStuck != "pause" && o.onStuck != "end" {
		return fmt.Errorf("--on-stuck %q: use pause or end", o.onStuck)
	}
	if o.answerSchemaFile != "" {
		b, err := os.ReadFile(o.answerSchemaFile)
		if err != nil {
			return fmt.Errorf("--answer-schema: %v", err)
		}
		if _, err := loop.CompileAnswerSchema(b); err != nil {
			return fmt.Errorf("--answer-schema %s: %v", o.answerSchemaFile, err)
		}
		o.answerSchema = b
	}
	return nil
}

func (o *sessionFlags) limits(writeTools bool) loop.Limits {
	l := loop.Limits{
		MaxIterations: o.maxIterations, Timeout: loop.Duration(o.timeout), ModelCallTimeout: loop.Duration(o.modelTimeout), ToolCallTimeout: loop.Duration(o.toolTimeout),
		BudgetTokens: o.budgetTokens, BudgetUSD: o.budgetUSD, BudgetToolCalls: o.budgetTools, MaxToolCallsPerTurn: o.maxPerTurn,
		OnStuck: o.onStuck, ContextTokens: o.contextWindow, MaxOutputTokens: o.maxOutputTokens,
	}
	if writeTools {
		l.NoProgressAfter = o.noProgress
	}
	if o.noWrapUp {
		off := false
		l.WrapUp = &off
	}
	if l.MaxIterations == 0 {
		l.MaxIterations = loop.DefaultMaxIterations
	}
	return l
}

// loopMode is the runner's mode for --mode.
func (o *sessionFlags) loopMode() loop.Mode {
	switch o.mode {
	case "self-reasoning":
		return loop.ModeSelfReasoning
	case "flash":
		return loop.ModeSingleShot
	}
	return loop.ModeTools
}

// defaultDB is $AGENTLOOP_DB, else the config file's db, else
// agentloop/sessions.db in the user's data dir.
func defaultDB() string {
	if p := os.Getenv("AGENTLOOP_DB"); p != "" {
		return p
	}
	if c, err := config.Load(config.DefaultPath()); err == nil && c.DB != "" {
		return c.DB
	}
	return defaultDataDB()
}

// captureSet remembers which flags were given, so they win over a profile.
func (o *sessionFlags) captureSet(fs *flag.FlagSet) {
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.complexity != "" {
		o.set["max-iterations"] = true
	}
}

// limitsWith returns the limits: flag defaults, then the profile's
// settings, then the flags given on the command line.
func (o *sessionFlags) limitsWith(writeTools bool, prof *config.Profile) loop.Limits {
	if prof == nil {
		return o.limits(writeTools)
	}
	flags := o.limits(writeTools)
	l := prof.LimitSettings.Apply(flags)
	if !writeTools {
		l.NoProgressAfter = 0
	}
	pick := map[string]func(){
		"max-iterations":          func() { l.MaxIterations = flags.MaxIterations },
		"timeout":                 func() { l.Timeout = flags.Timeout },
		"model-timeout":           func() { l.ModelCallTimeout = flags.ModelCallTimeout },
		"tool-timeout":            func() { l.ToolCallTimeout = flags.ToolCallTimeout },
		"budget-tokens":           func() { l.BudgetTokens = flags.BudgetTokens },
		"budget-usd":              func() { l.BudgetUSD = flags.BudgetUSD },
		"budget-tool-calls":       func() { l.BudgetToolCalls = flags.BudgetToolCalls },
		"max-tool-calls-per-turn": func() { l.MaxToolCallsPerTurn = flags.MaxToolCallsPerTurn },
		"no-progress":             func() { l.NoProgressAfter = flags.NoProgressAfter },
		"on-stuck":                func() { l.OnStuck = flags.OnStuck },
		"no-wrap-up":              func() { l.WrapUp = flags.WrapUp },
		"max-output-tokens":       func() { l.MaxOutputTokens = flags.MaxOutputTokens },
	}
	for name, apply := range pick {
		if o.set[name] {
			apply()
		}
	}
	if l.MaxIterations <= 0 {
		l.MaxIterations = loop.DefaultMaxIterations
	}
	return l
}

// loadConfig reads the config file: the one named by --config (which must
// exist), else the default path when it exists. It returns the selected
// agent profile, or nil when there is no file and no --profile.
func (o *sessionFlags) loadConfig() (*config.Config, *config.Profile, error) {
	path := o.configPath
	if path == "" {
		path = config.DefaultPath()
		if _, err := os.Stat(path); err != nil {
			if o.agent == "" {
				return nil, nil, nil
			}
			// No config file: a built-in profile, or say where profiles go.
			empty := &config.Config{}
			prof, err := empty.Profile(o.agent)
			if err != nil {
				return nil, nil, fmt.Errorf("--profile: %v; or write your own in %s (see config/example.yaml)", err, path)
			}
			return empty, &prof, nil
		}
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, err
	}
	prof, err := cfg.Profile(o.agent)
	if err != nil {
		return nil, nil, err
	}
	return cfg, &prof, nil
}
