package loop

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// Env is what runs one session: its model, its tools and the checks
// around them. A session records what it is (session.started); its Env is
// what that record resolves to in the process running it, so one Runner
// serves sessions with different models, workspaces and tools, and a
// session resumes anywhere its spec resolves.
type Env struct {
	Model model.Model
	// SwitchModel opens the model spec a model.switched names (a fallback
	// model); nil: the session's Env is resolved again.
	SwitchModel func(spec string) (model.Model, error)
	// Tools may be nil: no tools.
	Tools *tool.Registry
	// Gate decides whether a final answer ends the session (protocols).
	Gate Gate
	// Verifier checks the work when the model says it is done and when a
	// limit ends the session; nil skips verification.
	Verifier Verifier
	// Approval says how a call must be approved; nil approves everything.
	Approval func(t tool.Tool) Policy
	// Context adds text to the system message of each request, derived
	// from the state (e.g. the plan and its current step).
	Context func(st *State) string
	// SystemPrompt is recorded for a new session whose task names none
	// (a resolver builds it for the tools it resolved).
	SystemPrompt string
	// Sandbox and Network are the sandbox backend and network policy the
	// env's processes run under, recorded in a new session's
	// session.started when its task names none (so recovery and workers
	// apply the same rules).
	Sandbox, Network string
	// Close releases what the resolver opened (MCP servers, say); the
	// runner calls it once, when the session stops running here.
	Close func()
	// Ended, when set, is called once, after Close, when the session
	// stopped running here because it ended and its end is durable: no
	// process of it runs again, so the resolver drops what only its
	// processes use (their private scratch directory). A paused or
	// waiting session keeps it, and so does one whose end was not saved
	// (it is resumed to finish) or commits behind the return
	// (Config.EndBehind).
	Ended func()
}

// Resolver builds the Env of a session from what session.started
// recorded. st is the session's folded state: for a new session, the state
// right after session.started; for a stored one, its state so far (a
// scripted model uses st.InteractionCount to skip the replies it played).
// A resolver must not keep spec or st.
type Resolver func(ctx context.Context, spec *SessionStarted, st *State) (*Env, error)

// ErrNoModel is returned (wrapped) when a session needs a model and its
// spec resolved to none.
var ErrNoModel = errors.New("no model is configured")

// defaultEnv is the Env of Config's own fields, for runners without a
// Resolver.
func (c *Config) defaultEnv() *Env {
	return &Env{Model: c.Model, Tools: c.Tools, Gate: c.Gate, Verifier: c.Verifier, Approval: c.Approval, Context: c.Context, SystemPrompt: c.SystemPrompt}
}

// resolve returns the Env of a session: Config.Resolve's, or the default.
func (r *Runner) resolve(ctx context.Context, id string, spec *SessionStarted, st *State) (*Env, error) {
	if r.cfg.Resolve == nil {
		if r.cfg.Model == nil {
			return nil, fmt.Errorf("session %s: this runner has no model (it records controls, it runs no session): %w", id, ErrNoModel)
		}
		return r.cfg.defaultEnv(), nil
	}
	if spec == nil {
		return nil, fmt.Errorf("session %s: its log has no session.started to resolve", id)
	}
	env, err := r.cfg.Resolve(ctx, spec, st)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	if env == nil || env.Model == nil {
		if env != nil && env.Close != nil {
			env.Close()
		}
		return nil, fmt.Errorf("session %s: model %q: %w", id, spec.Model, ErrNoModel)
	}
	return env, nil
}

// needEnv resolves the session's Env from its recorded spec, once.
func (s *Session) needEnv(ctx context.Context) error {
	if s.env != nil {
		return nil
	}
	env, err := s.r.resolve(ctx, s.id, s.spec, s.state)
	if err != nil {
		return err
	}
	s.env = env
	return nil
}

// envGate is the session's gate, or nil before its Env is resolved.
func (s *Session) envGate() Gate {
	if s.env == nil {
		return nil
	}
	return s.env.Gate
}

// closeEnv releases the session's Env once, and what only a running
// session needs once it ended.
func (s *Session) closeEnv() {
	if s.env == nil {
		return
	}
	if s.env.Close != nil {
		s.env.Close()
		s.env.Close = nil
	}
	if s.env.Ended != nil && s.state != nil && s.state.Status.Finished() && s.cready && s.c.settled() {
		s.env.Ended()
	}
	s.env.Ended = nil
}
