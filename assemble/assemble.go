// Package assemble is the composition root: it turns what a session
// recorded about itself (loop.SessionStarted) into what runs it here (a
// loop.Env: model client, tools, protocol gate, verifier, approvals), and
// gives a process the rest of a runner's wiring (tool-call recovery,
// prices, token estimates, the session database). The CLI, the server and
// workers build their runners from it, so a session started by one resumes
// in any other.
//
// What a spec resolves to:
//
//	model        script:PATH → the scripted model (skipping replies already played);
//	             PROVIDER/NAME → model/provider, at the recorded endpoint with the
//	             recorded num_ctx / stream_tools, the key from the process (never the log)
//	tools        none in self-reasoning mode, or in single-shot mode unless the profile
//	             names tools; else file, shell, git and session tools in the workspace,
//	             narrowed to the profile's list, plus its MCP servers' tools; a stored
//	             session keeps exactly the tools it recorded
//	gate         the protocol file, when one is recorded (it owns the plan)
//	verifier     the recorded verification commands, run in the workspace
//	approvals    auto: none asked; profile: the profile's rules; ask (the default):
//	             reading tools run, the others wait for a person
//	system prompt  built for the resolved tools, for a new session that names none
package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/protocol"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
	"github.com/agentloop/agentloop/tool/plan"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
	"github.com/agentloop/agentloop/verify"
)

// Resolver resolves session specs in this process. Its fields are what a
// process knows that a log must not hold (credentials, the config file)
// and what a person overrides when resuming; the zero value resolves a
// spec exactly as recorded, with keys from the environment.
type Resolver struct {
	// Config holds the profiles a spec may name; nil means none.
	Config *config.Config
	// APIKey is the model API key; empty means the profile's api_key_env,
	// else the provider's usual environment variable.
	APIKey string
	// BaseURL is the endpoint this process was given, credentials and
	// all: a session whose recorded endpoint is this URL redacted
	// (RedactURL) is sent here, so the log never holds the secret.
	BaseURL string
	// PromptTemplate is a system prompt template file for new sessions
	// (the profile's system_prompt_file when empty).
	PromptTemplate string
	// Override, when set, changes a copy of the spec before it resolves:
	// a person resuming with another --model, --base-url or --dir. The
	// log keeps what the session was started with.
	Override func(spec *loop.SessionStarted)
	// Sandbox is what this process allows sessions' processes; nil: a
	// session that records no sandbox runs them unconfined (one that
	// records a backend gets it).
	Sandbox *Sandboxing
	// OnWorkspace, when set, sees the workspace each session's tools use
	// (it tracks the files they change, for a diff at the end).
	OnWorkspace func(sessionID string, ws *workspace.Workspace)
	// Log receives what the resolver could not tidy (an ended session's
	// private directory it failed to remove); nil: slog.Default().
	Log *slog.Logger
}

func (r *Resolver) logger() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

// Resolve builds the Env of a session. It satisfies loop.Resolver.
func (r *Resolver) Resolve(ctx context.Context, recorded *loop.SessionStarted, st *loop.State) (*loop.Env, error) {
	spec := *recorded
	if r.Override != nil {
		r.Override(&spec)
	}
	prof, err := r.profile(spec.Profile)
	if err != nil {
		return nil, err
	}
	if st.CurrentModel != "" && st.CurrentModel != recorded.Model && spec.Model == recorded.Model {
		spec = fallbackSpec(spec, st.CurrentModel) // a model.switched moved it on
	}
	m, err := r.openModel(&spec, prof, scriptPlayed(st, recorded.Model, spec.Model))
	if err != nil {
		return nil, err
	}
	env, err := r.build(ctx, st.ID, &spec, prof)
	if err != nil {
		return nil, err
	}
	env.Model = m
	env.SwitchModel = func(name string) (model.Model, error) {
		next := fallbackSpec(spec, name)
		return r.openModel(&next, prof, scriptPlayed(st, recorded.Model, name))
	}
	return env, nil
}

// Prompt returns the system prompt a new session with this spec gets, and
// how many tools it is offered.
func (r *Resolver) Prompt(ctx context.Context, spec *loop.SessionStarted) (string, int, error) {
	prof, err := r.profile(spec.Profile)
	if err != nil {
		return "", 0, err
	}
	env, err := r.build(ctx, "", spec, prof)
	if err != nil {
		return "", 0, err
	}
	env.Close()
	return env.SystemPrompt, len(env.Tools.Names()), nil
}

// build resolves everything but the model.
func (r *Resolver) build(ctx context.Context, sessionID string, spec *loop.SessionStarted, prof *config.Profile) (*loop.Env, error) {
	env := &loop.Env{Context: plan.Context}
	var closers []func()
	// releasePrivate lets the session's private directory go, last.
	var releasePrivate func()
	env.Close = func() {
		for _, c := range closers {
			c()
		}
		if releasePrivate != nil {
			releasePrivate()
		}
	}
	fail := func(err error) (*loop.Env, error) {
		env.Close()
		return nil, err
	}
	var tools []tool.Tool
	ws, err := workspaceOf(spec.Workspace)
	if err != nil {
		return fail(err)
	}
	if ws != nil && r.OnWorkspace != nil {
		r.OnWorkspace(sessionID, ws)
	}
	var policy *sandbox.Policy
	policy, releasePrivate, err = r.sandboxPolicy(ctx, spec, prof, sessionID, ws)
	if err != nil {
		return fail(err)
	}
	if policy != nil {
		env.Sandbox, env.Network = string(policy.Backend), policy.Network.String()
		if dir := policy.Private; dir != "" {
			// The session's HOME, TMPDIR and caches serve its processes
			// only; its work is in the workspace. A session rewound after
			// its end starts with a fresh one, and one this fails to
			// remove is left where it was, as before this tidying. Ended
			// runs after Close, which let the directory go.
			env.Ended = func() {
				// One in use again (the session rewound here meanwhile)
				// is its new user's.
				if err := sandbox.RemovePrivateDir(r.privateBase(), sessionID); err != nil && !errors.Is(err, sandbox.ErrPrivateDirInUse) {
					r.logger().Warn("an ended session's private directory (its commands' HOME, TMPDIR and caches) could not be removed; nothing needs it: remove it by hand", "session_id", sessionID, "dir", dir, "err", err)
				}
			}
		}
	} else if ws != nil {
		env.Sandbox = string(sandbox.None)
	}
	if offersTools(spec.Mode, prof) {
		if ws == nil {
			return fail(fmt.Errorf("the session has no workspace for its tools; give it a directory"))
		}
		tools = BuiltinSandboxed(ws, policy)
		if prof != nil && prof.Tools != nil {
			tools = only(tools, prof.Tools)
		}
		if prof != nil && len(prof.MCPServers) > 0 {
			cfgs := make([]mcp.ServerConfig, len(prof.MCPServers))
			for i, c := range prof.MCPServers {
				// The session's servers work in its workspace, and no call
				// names a path outside it.
				c.Confine = func(p string) error { _, err := ws.Resolve(p); return err }
				c.Sandbox = policy
				if c.Dir == "" && c.Command != "" {
					c.Dir = ws.Root()
				}
				cfgs[i] = c
			}
			servers, err := mcp.ConnectAll(ctx, cfgs)
			if err != nil {
				return fail(err)
			}
			closers = append(closers, func() { _ = servers.Close() })
			tools = append(tools, servers.Tools()...)
		}
	}
	if path := protocolOf(spec); path != "" {
		p, err := protocol.Load(path)
		if err != nil {
			return fail(err)
		}
		env.Gate = &protocol.Gate{P: p, Dir: spec.Workspace}
		tools = without(tools, "update_plan") // the protocol owns the plan
	}
	if len(spec.Tools) > 0 {
		tools = only(tools, spec.Tools) // a stored session keeps the tools it had
	}
	if env.Tools, err = tool.NewRegistry(tools...); err != nil {
		return fail(err)
	}
	if len(spec.Verify) > 0 && ws != nil {
		env.Verifier = verify.New(ws, spec.Verify, shell.Config{Sandbox: policy})
	}
	env.Approval = approvals(spec.Approval, prof)
	if spec.SystemPrompt == "" {
		if env.SystemPrompt, err = r.systemPrompt(spec, prof, env.Tools, ws); err != nil {
			return fail(err)
		}
	}
	return env, nil
}

// profile returns the named profile, or nil for none.
func (r *Resolver) profile(name string) (*config.Profile, error) {
	if name == "" {
		return nil, nil
	}
	if r.Config == nil {
		if p, ok := config.Builtin(name); ok {
			return &p, nil
		}
		return nil, fmt.Errorf("the session uses profile %q, but no config file is loaded (pass --config, or set $AGENTLOOP_CONFIG); built-in profiles: %s", name, strings.Join(config.BuiltinNames(), ", "))
	}
	p, err := r.Config.Profile(name)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// protocolOf is the session's protocol file; logs written before the
// field existed kept it in a label.
func protocolOf(spec *loop.SessionStarted) string {
	if spec.Protocol != "" {
		return spec.Protocol
	}
	return spec.Labels["protocol"]
}

// approvals is how tool calls are approved under the recorded mode.
func approvals(mode string, prof *config.Profile) func(tool.Tool) loop.Policy {
	switch {
	case mode == "auto":
		return nil
	case mode == "profile" && prof != nil:
		return prof.ApprovalFunc()
	}
	return AskBeforeChanges
}

// AskBeforeChanges lets reading tools run and makes every other tool wait
// for a person.
func AskBeforeChanges(t tool.Tool) loop.Policy {
	if tool.EffectOf(t) == tool.EffectRead {
		return loop.PolicyAuto
	}
	return loop.PolicyAsk
}

// offersTools says whether a session in this mode gets tools: not when the
// model only reasons, and in single-shot mode only when the profile names
// tools.
func offersTools(mode loop.Mode, prof *config.Profile) bool {
	switch mode {
	case loop.ModeSelfReasoning:
		return false
	case loop.ModeSingleShot:
		return prof != nil && len(prof.Tools) > 0
	}
	return true
}

// AbsPath is path made absolute, for recording: a spec must not depend on
// the directory of the process that resumes it.
func AbsPath(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	return filepath.Abs(path)
}
