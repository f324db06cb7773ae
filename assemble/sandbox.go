package assemble

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Sandboxing is what a process allows the sessions it resolves.
type Sandboxing struct {
	// Policy is the process's policy: its backend is the one for sessions
	// that record none, its network the widest any session gets, and its
	// user and limits apply to all.
	Policy sandbox.Policy
	// NeverPorts are never in a session's allowed ports: the server's own
	// port and the database's.
	NeverPorts []uint16
	// Dir is where sessions' private directories are made (default
	// sandbox.DefaultPrivateBase()).
	Dir string
}

// sandboxPolicy is the policy a session's processes run under, or nil
// when they run unconfined. The recorded spec comes first (so recovery
// and workers apply what the session started with), then the profile,
// then the process; a spec or profile narrows the process's network
// policy and cannot turn a confining process's sandbox off.
//
// A session's private directory is marked in use (sandbox.UsePrivateDir)
// until release is called; release is nil when there is none.
func (r *Resolver) sandboxPolicy(ctx context.Context, spec *loop.SessionStarted, prof *config.Profile, sessionID string, ws *workspace.Workspace) (_ *sandbox.Policy, release func(), _ error) {
	p := sandbox.Policy{Backend: sandbox.None, Network: sandbox.FullNetwork}
	var never []uint16
	base := r.privateBase()
	if r.Sandbox != nil {
		p, never = r.Sandbox.Policy, r.Sandbox.NeverPorts
	}
	processConfines := p.Confined()
	backend, network := spec.Sandbox, spec.Network
	if prof != nil {
		backend, network = or(backend, prof.Sandbox), or(network, prof.Network)
	}
	if backend != "" {
		b, err := sandbox.ParseBackend(backend)
		if err != nil {
			return nil, nil, err
		}
		if b == sandbox.None && processConfines {
			return nil, nil, fmt.Errorf("the session asks to run commands unconfined (sandbox none), but this process confines them (%s); resume it with --sandbox none to allow that", p.Backend)
		}
		p.Backend = b
	}
	if network != "" {
		n, err := sandbox.ParseNetwork(network)
		if err != nil {
			return nil, nil, err
		}
		p.Network = n.Narrow(p.Network)
	}
	p.Network = p.Network.Without(never...)
	if !p.Confined() || ws == nil {
		return nil, nil, nil
	}
	if prof != nil {
		p.Limits = p.Limits.Over(prof.SandboxLimits)
	}
	p = p.WithDefaults()
	p.Workspace = ws.Root()
	if err := commandUser(&p, p.Workspace); err != nil {
		return nil, nil, err
	}
	if sessionID != "" {
		dir, release, err := sandbox.UsePrivateDir(ctx, base, sessionID, p.UID, p.GID)
		if err != nil {
			return nil, nil, err
		}
		p.Private = dir
		return &p, release, nil
	}
	return &p, nil, nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
