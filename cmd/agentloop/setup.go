package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/protocol"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/mcp"
	"github.com/agentloop/agentloop/tool/plan"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
	"github.com/agentloop/agentloop/verify"
)

// cliEnv is what a command needs to run sessions: the store, a runner with
// the model and tools, and the progress display.
type cliEnv struct {
	store       *sqlite.Store
	runner      *loop.Runner
	registry    *tool.Registry
	progress    *progress
	interactive bool
	dir         string
	modelSpec   string
	ws          *workspace.Workspace
	profile     *config.Profile
	mcp         mcp.Servers
	protocol    string // absolute path of the protocol file, if any
	// contextWindow is the model's context window when known (Ollama).
	contextWindow int
	// feed fans the store's commits out to the progress display.
	feed     *feed.Feed
	stopFeed func()
}

func (e *cliEnv) Close() {
	if e.stopFeed != nil {
		e.stopFeed()
	}
	if e.store != nil {
		_ = e.store.Close()
	}
	if e.mcp != nil {
		_ = e.mcp.Close()
	}
}

// fromProfile fills in what the command line left unset from the agent
// profile of the config file.
func (o *sessionFlags) fromProfile(c *config.Config, p *config.Profile) {
	if o.model == "" {
		o.model = p.Model
	}
	if o.baseURL == "" {
		o.baseURL = p.BaseURL
	}
	if o.apiKey == "" && p.APIKeyEnv != "" {
		o.apiKey = os.Getenv(p.APIKeyEnv)
	}
	if o.promptFile == "" {
		o.promptFile = p.SystemPromptFile
	}
	if o.numCtx == 0 {
		o.numCtx = p.NumCtx
	}
	if !o.set["stream-tools"] {
		o.streamTools = p.StreamTools
	}
	if len(o.verify) == 0 {
		o.verify = p.Verify
	}
	if !o.set["db"] && c.DB != "" && os.Getenv("AGENTLOOP_DB") == "" {
		o.db = c.DB
	}
	o.pricesFile = c.Prices
}

// fromRecorded fills in what a stored session was started with and the
// command line leaves unset: its endpoint, approval mode and profile, so
// resuming or recovering it never sends it elsewhere or asks differently.
func (o *sessionFlags) fromRecorded(st *loop.State) {
	if o.baseURL == "" {
		o.baseURL = st.Endpoint
	}
	if !o.set["yes"] && st.Approval == "auto" {
		o.yes = true
	}
	if o.agent == "" {
		o.agent = st.Profile
	}
}

// recorded returns what run records of how the session is started: the
// endpoint (without credentials), the approval mode and the profile.
func (o *sessionFlags) recorded(prof *config.Profile) (endpoint, approval, profile string) {
	endpoint = withoutCredentials(o.baseURL)
	switch {
	case o.yes:
		approval = "auto"
	case prof != nil:
		approval, profile = "profile", prof.Name
	default:
		approval = "ask"
	}
	if prof != nil {
		profile = prof.Name
	}
	return endpoint, approval, profile
}

// withoutCredentials drops a user and password from a URL: they must not
// reach the log.
func withoutCredentials(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// onlyTools keeps the named tools, in the given order.
func onlyTools(tools []tool.Tool, names []string) []tool.Tool {
	by := map[string]tool.Tool{}
	for _, t := range tools {
		by[t.Spec().Name] = t
	}
	var out []tool.Tool
	for _, n := range names {
		if t, ok := by[n]; ok {
			out = append(out, t)
		}
	}
	return out
}

func (e *cliEnv) hasWriteTools() bool {
	for _, name := range e.registry.Names() {
		t, _ := e.registry.Lookup(name)
		if tool.EffectOf(t) != tool.EffectRead {
			return true
		}
	}
	return false
}

// openStore opens the session database, creating its directory. Sessions
// hold tasks, code and tool output: the files are the user's alone (0600
// in a 0700 directory it creates).
func openStore(path string) (*sqlite.Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("cannot create the directory for the session database %s: %w (set --db or AGENTLOOP_DB)", path, err)
		}
	}
	st, err := sqlite.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening session database %s: %w", path, err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if info, err := os.Stat(f); err == nil && info.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(f, 0o600) // SQLite gives its -wal and -shm files the database's mode
		}
	}
	return st, nil
}

// open builds the environment. For a stored session (st != nil) the model
// and workspace default to what the session was started with, and a
// scripted model skips the replies it already played.
func (o *sessionFlags) open(ctx context.Context, stderr io.Writer, st *loop.State) (*cliEnv, error) {
	env := &cliEnv{interactive: isTerminal(os.Stdin) && isTerminal(os.Stderr)}
	if st != nil {
		o.fromRecorded(st)
	}
	cfgFile, prof, err := o.loadConfig()
	if err != nil {
		return nil, err
	}
	env.profile = prof
	if prof != nil {
		o.fromProfile(cfgFile, prof)
	}
	spec, dir := o.model, o.dir
	if st != nil {
		if spec == "" {
			spec = st.Model
		}
		if dir == "." && st.Workspace != "" {
			dir = st.Workspace
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	env.dir = abs
	m, spec, err := o.openModel(spec, st)
	if err != nil {
		return nil, err
	}
	env.modelSpec = spec
	if strings.HasPrefix(spec, "ollama/") {
		// Ollama's window is the num_ctx the session asks for.
		env.contextWindow = o.numCtx
		if env.contextWindow == 0 {
			env.contextWindow = provider.DefaultOllamaNumCtx
		}
	}

	if st != nil && !o.set["mode"] && !o.set["self-reasoning"] {
		o.mode = modeFlag(st.Mode) // a resumed session keeps its mode
	}
	var tools []tool.Tool
	if o.offersTools(prof) {
		ws, err := workspace.New(abs)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", abs, err)
		}
		env.ws = ws
		tools = append(tools, fs.Tools(ws)...)
		tools = append(tools, extraTools(ws)...)
		if prof != nil && prof.Tools != nil {
			tools = onlyTools(tools, prof.Tools)
		}
		if prof != nil && len(prof.MCPServers) > 0 {
			servers, err := mcp.ConnectAll(ctx, prof.MCPServers)
			if err != nil {
				return nil, err
			}
			env.mcp = servers
			tools = append(tools, servers.Tools()...)
		}
	}
	protoPath := o.protocol
	if st != nil && protoPath == "" {
		protoPath = st.Labels["protocol"]
	}
	var gate loop.Gate
	if protoPath != "" {
		p, err := protocol.Load(protoPath)
		if err != nil {
			return nil, err
		}
		gate = &protocol.Gate{P: p, Dir: abs}
		env.protocol, _ = filepath.Abs(protoPath)
		tools = withoutTool(tools, "update_plan") // the protocol owns the plan
	}
	if env.registry, err = tool.NewRegistry(tools...); err != nil {
		return nil, err
	}
	if env.store, err = openStore(o.db); err != nil {
		return nil, err
	}
	env.feed = feed.New(env.store)
	env.stopFeed = env.store.Watch(env.feed.Publish)
	env.progress = newProgress(stderr, isTerminal(os.Stderr), o.maxIterations)
	env.progress.quiet = o.quiet
	prices, err := loadPrices(o.pricesFile)
	if err != nil {
		env.Close()
		return nil, err
	}
	sys, err := o.systemPrompt(env, st)
	if err != nil {
		env.Close()
		return nil, err
	}
	cfg := loop.Config{
		Model: m, ModelName: spec, Tools: env.registry, Log: env.store,
		SystemPrompt: sys, Marker: o.marker,
		ParseToolCalls: parseToolCalls, Price: prices.Cost, EstimateUsage: estimateUsage,
		OnDelta: env.progress.delta,
		Context: plan.Context, Gate: gate,
	}
	cfg.Mode = o.loopMode()
	verifyCmds := []string(o.verify)
	if st != nil && len(verifyCmds) == 0 {
		verifyCmds = st.Verify
	}
	if len(verifyCmds) > 0 && env.ws != nil {
		cfg.Verifier = verify.New(env.ws, verifyCmds, shell.Config{})
	}
	if !o.yes && prof != nil {
		cfg.Approval = prof.ApprovalFunc()
	} else if !o.yes {
		cfg.Approval = func(t tool.Tool) loop.Policy {
			if tool.EffectOf(t) == tool.EffectRead {
				return loop.PolicyAuto
			}
			return loop.PolicyAsk
		}
	}
	if env.runner, err = loop.New(cfg); err != nil {
		env.Close()
		return nil, err
	}
	return env, nil
}

// openModel resolves --model. script:PATH plays a scripted model; anything
// else goes to a provider.
func (o *sessionFlags) openModel(spec string, st *loop.State) (model.Model, string, error) {
	if path, ok := strings.CutPrefix(spec, "script:"); ok {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, "", err
		}
		script, err := scripted.Load(abs)
		if err != nil {
			return nil, "", err
		}
		m := scripted.New(script)
		if st != nil {
			// Resuming: the replies already played are in the log.
			m.Skip(st.InteractionCount)
		}
		return m, "script:" + abs, nil
	}
	return openProvider(spec, provider.Options{BaseURL: o.baseURL, APIKey: o.apiKey, NumCtx: o.numCtx, StreamTools: o.streamTools})
}

// modeFlag is the --mode value of a recorded mode.
func modeFlag(m loop.Mode) string {
	switch m {
	case loop.ModeSelfReasoning:
		return "self-reasoning"
	case loop.ModeSingleShot:
		return "flash"
	}
	return "tools"
}

func withoutTool(tools []tool.Tool, name string) []tool.Tool {
	out := tools[:0:0]
	for _, t := range tools {
		if t.Spec().Name != name {
			out = append(out, t)
		}
	}
	return out
}
