package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/tool/workspace"
)

// cliEnv is what a command needs to run sessions: the store, a runner
// whose sessions resolve through package assemble, and the progress display.
type cliEnv struct {
	store       store.Store
	svc         *service.Service
	caller      service.Caller
	resolver    *assemble.Resolver
	progress    *progress
	interactive bool
	dir         string
	ws          *workspace.Workspace // the session's, once it resolved
	profile     *config.Profile
	// feed fans the store's commits out to the progress display.
	feed     *feed.Feed
	stopFeed func()
	// doneObserving ends telemetry (traces when OTEL_* asks for them).
	doneObserving func()
	// again are the flags a printed follow-up command needs to find the
	// same session and config (" --db PATH" when not the default, …).
	again string
	// where is the part of again that finds the session alone (" --db
	// PATH", " --server URL"): all that sessions show takes.
	where string
	// keyFromEnv: the server is reached with $AGENTLOOP_KEY, so a printed
	// command needs it set as well. Its value is never printed.
	keyFromEnv bool
}

func (e *cliEnv) Close() {
	if e.svc != nil {
		_ = e.svc.Close()
	}
	if e.stopFeed != nil {
		e.stopFeed()
	}
	if e.doneObserving != nil {
		e.doneObserving()
	}
	if e.store != nil {
		_ = e.store.Close()
	}
}

// fromProfile fills in what the command line left unset from the agent
// profile of the config file.
func (o *sessionFlags) fromProfile(c *config.Config, p *config.Profile) {
	if o.model == "" {
		o.model = p.Model
	}
	if o.fallbacks == "" {
		o.fallbacks = strings.Join(p.FallbackModels, ",")
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
	if !o.set["thinking"] {
		o.thinking = p.Thinking
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
	endpoint = assemble.RedactURL(o.baseURL)
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

// openSession is what a command acting on a recorded session works
// with: the session's state, and the environment to act in, under a
// context a first Ctrl-C cancels.
type openSession struct {
	ctx   context.Context
	env   *cliEnv
	state *loop.State
	stop  func() // ends ctx's watch for Ctrl-C
}

// close gives up the environment and the watch for Ctrl-C.
func (r *openSession) close() {
	r.env.Close()
	r.stop()
}

// openRecorded checks the flags (parsed, captureSet done) of command
// `sessions name`, reads session id's state and opens the environment to
// act on it, with what the session recorded winning over defaults. What
// goes wrong is printed; code is then what the command exits with.
func (o *sessionFlags) openRecorded(name, id string, stderr io.Writer) (_ *openSession, code int) {
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "agentloop sessions %s: %v\n", name, err)
		return nil, exitUsage
	}
	state, _, err := loadState(o.db, id)
	if err != nil {
		return nil, fail(stderr, "%v", err)
	}
	ctx, stop := interruptContext(stderr)
	env, err := o.open(ctx, stderr, state)
	if err != nil {
		stop()
		return nil, fail(stderr, "%v", err)
	}
	return &openSession{ctx: ctx, env: env, state: state, stop: stop}, 0
}

// open builds the environment. For a stored session (st != nil) what the
// session recorded wins over defaults, and only flags given on the
// command line override it.
func (o *sessionFlags) open(ctx context.Context, stderr io.Writer, st *loop.State) (*cliEnv, error) {
	env := &cliEnv{interactive: isTerminal(os.Stdin) && isTerminal(os.Stderr)}
	defer func() { env.again, env.where = o.againFlags(), o.whereFlags() }()
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
	dir := o.dir
	if st != nil && !o.set["dir"] && st.Workspace != "" {
		dir = st.Workspace
	}
	if env.dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if st != nil && !o.set["mode"] && !o.set["self-reasoning"] {
		o.mode = modeFlag(st.Mode) // a resumed session keeps its mode
	}
	prices, err := assemble.Prices(o.pricesFile)
	if err != nil {
		return nil, err
	}
	sb, err := o.sandboxing(portOf(o.db))
	if err != nil {
		return nil, err
	}
	env.resolver = &assemble.Resolver{Config: cfgFile, APIKey: o.apiKey, PromptTemplate: o.promptFile, Override: o.override(env.dir),
		OnWorkspace: func(_ string, ws *workspace.Workspace) { env.ws = ws }, Sandbox: sb}
	if env.store, err = assemble.OpenStore(o.db); err != nil {
		return nil, err
	}
	var tel *telemetry.Telemetry
	if tel, env.doneObserving, err = observe(env.store, false, stderr); err != nil {
		env.Close()
		return nil, err
	}
	env.feed = feed.New(env.store)
	env.stopFeed = env.store.Watch(env.feed.Publish)
	env.progress = newProgress(stderr, isTerminal(os.Stderr), o.maxIterations)
	env.progress.quiet = o.quiet
	cfg := env.resolver.RunnerConfig(env.store, prices)
	cfg.Resolve = tel.Resolver(cfg.Resolve) // model calls join the session's trace
	cfg.Marker, cfg.Mode = o.marker, o.loopMode()
	cfg.OnDelta = env.progress.delta
	env.caller = localCaller()
	cps := checkpointsFor(o.db)
	cfg.Checkpoint = checkpointHook(cps, cfgFile)
	if env.svc, err = service.New(service.Config{Store: env.store, Runner: cfg, Feed: env.feed, Context: ctx, Checkpoints: cps, PrivateDirs: sandbox.DefaultPrivateBase()}); err != nil {
		env.Close()
		return nil, err
	}
	return env, nil
}

// localCaller is the person at this terminal: the local tenant, every scope.
func localCaller() service.Caller {
	name := os.Getenv("USER")
	if name == "" {
		name = "local"
	}
	return service.Local(name)
}

// override applies the flags given on the command line to a stored
// session's spec: another model, endpoint, workspace, provider settings
// or verification commands for this run (the log keeps the originals).
func (o *sessionFlags) override(dir string) func(*loop.SessionStarted) {
	return func(spec *loop.SessionStarted) {
		if o.set["model"] {
			if m, err := assemble.ModelSpec(o.model); err == nil {
				spec.Model = m
			}
		}
		if o.set["base-url"] {
			spec.Endpoint = o.baseURL
		}
		if o.set["dir"] {
			spec.Workspace = dir
		}
		if o.set["num-ctx"] || o.set["stream-tools"] || o.set["thinking"] {
			mo := loop.ModelOptions{}
			if spec.ModelOptions != nil {
				mo = *spec.ModelOptions
			}
			if o.set["num-ctx"] {
				mo.NumCtx = o.numCtx
			}
			if o.set["stream-tools"] {
				mo.StreamTools = o.streamTools
			}
			if o.set["thinking"] {
				mo.Thinking = o.thinking
			}
			spec.ModelOptions = &mo
		}
		if len(o.verify) > 0 && o.set["verify"] {
			spec.Verify = o.verify
		}
		if o.set["protocol"] {
			spec.Protocol = o.protocol
		}
		if o.set["sandbox"] {
			spec.Sandbox = o.backend
		}
		if o.set["network"] {
			spec.Network = o.network
		}
	}
}

// spec is what run records for a new session: the flags as a start
// request (what `run --server` sends), made a task by the same
// assemble.StartDefaults.Task as a server's POST /v1/sessions, with this
// machine's settings as the defaults — the profile, --base-url, Ollama's
// options and the limits (flags over the profile's). The person at this
// terminal may ask for anything: tools that run unasked, files of this
// machine, verification under any approval.
func (o *sessionFlags) spec(env *cliEnv, task string, messages []model.Message) (loop.Task, error) {
	limits := o.limitsWith(true, env.profile) // no-progress is dropped for sessions without write tools
	endpoint, approval, profile := o.recorded(env.profile)
	d := assemble.StartDefaults{Model: o.model, Endpoint: endpoint, Profile: profile, Approval: approval, Limits: &limits,
		ModelOptions: loop.ModelOptions{NumCtx: o.numCtx, StreamTools: o.streamTools}, AllowFiles: true, LocalVerify: true}
	req := o.startRequest(task, messages)
	req.Model, req.Mode, req.Workspace, req.MaxIterations = o.model, o.mode, env.dir, limits.MaxIterations
	req.Timeout, req.BudgetTokens, req.BudgetUSD = "", 0, 0 // in limits, with the profile's
	if approval == "auto" {
		d.Approval, req.Approval = "ask", "auto"
	}
	return d.Task(req, true)
}

// startRequest is the start request the flags make, as `run --server`
// sends it: what the command line says, the rest left to the server.
func (o *sessionFlags) startRequest(task string, messages []model.Message) api.StartRequest {
	req := api.StartRequest{Task: task, Messages: assemble.WireMessages(messages), MaxIterations: o.maxIterations, Verify: o.verify,
		Profile: o.agent, Protocol: o.protocol, Thinking: o.thinking, Labels: o.labels, BudgetTokens: o.budgetTokens, BudgetUSD: o.budgetUSD,
		AnswerSchema: o.answerSchema, MaxOutputTokens: o.maxOutputTokens}
	if len(messages) > 0 {
		req.Task = "" // the task is the conversation's last message
	}
	if o.set["mode"] || o.set["self-reasoning"] {
		req.Mode = o.mode
	}
	if o.set["timeout"] {
		req.Timeout = o.timeout.String()
	}
	if o.yes {
		req.Approval = "auto"
	}
	for _, m := range strings.Split(o.fallbacks, ",") {
		if m = strings.TrimSpace(m); m != "" {
			req.FallbackModels = append(req.FallbackModels, m)
		}
	}
	return req
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

// againFlags are the flags a follow-up command needs to reach what this
// one used: the database when it is not the default, the config file when
// one was named.
func (o *sessionFlags) againFlags() string {
	var b strings.Builder
	b.WriteString(o.whereFlags())
	if o.configPath != "" {
		b.WriteString(" --config " + shellQuote(o.configPath))
	}
	return b.String()
}

// whereFlags is the database flag a printed command needs to find the
// session: --db when it is not the default.
func (o *sessionFlags) whereFlags() string {
	if o.db != "" && o.db != defaultDB() {
		return " --db " + shellQuote(o.db)
	}
	return ""
}

// remoteEnv is what report needs to print follow-up commands for a session
// on the server at url: each names it with --server (it may have come from
// $AGENTLOOP_SERVER, which the reader may not have set).
func remoteEnv(url string) *cliEnv {
	again := " --server " + shellQuote(url)
	return &cliEnv{again: again, where: again, keyFromEnv: os.Getenv("AGENTLOOP_KEY") != ""}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '@' || r == '=' || r == '+' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
