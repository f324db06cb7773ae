package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/sandbox"
)

// sandboxFlags choose the sandbox of the processes sessions start.
type sandboxFlags struct {
	backend string
	network string
	uid     int
	unsafe  bool // serve: --unsafe-no-sandbox
}

// register adds --sandbox, --network and --sandbox-uid; defNetwork is the
// command's default network policy (run: full, serve and worker: none).
func (f *sandboxFlags) register(fs *flag.FlagSet, defNetwork string) {
	fs.StringVar(&f.backend, "sandbox", os.Getenv("AGENTLOOP_SANDBOX"), fmt.Sprintf("where commands, verification, git and MCP servers run: landlock, bwrap (bubblewrap) or none (unconfined); default %s ($AGENTLOOP_SANDBOX; agentloop doctor says which work here)", sandbox.DefaultBackend()))
	fs.StringVar(&f.network, "network", defNetwork, "what sandboxed processes may reach: none, full, or TCP ports (443,80); a profile can only narrow it")
	fs.IntVar(&f.uid, "sandbox-uid", sandbox.Nobody, "when agentloop runs as root, the unprivileged uid (and gid) sandboxed processes run as")
}

// sandboxing is what the process allows, after checking that the backend
// works here (it never falls back to running unconfined). never are
// ports no session may reach (the server's and the database's).
func (f *sandboxFlags) sandboxing(never ...uint16) (*assemble.Sandboxing, error) {
	b, err := sandbox.ParseBackend(f.backend)
	if err != nil {
		return nil, fmt.Errorf("--sandbox: %v", err)
	}
	n, err := sandbox.ParseNetwork(f.network)
	if err != nil {
		return nil, fmt.Errorf("--network: %v", err)
	}
	if f.uid <= 0 {
		return nil, fmt.Errorf("--sandbox-uid %d: commands never run as root; give an unprivileged uid such as %d", f.uid, sandbox.Nobody)
	}
	if err := sandbox.Probe(b, n); err != nil {
		return nil, fmt.Errorf("--sandbox %s cannot work here: %v (or pass --sandbox none to run commands unconfined)", b, err)
	}
	p := sandbox.Policy{Backend: b, Network: n, UID: f.uid, GID: f.uid}
	return &assemble.Sandboxing{Policy: p, NeverPorts: never}, nil
}

// portOf is the TCP port of a listen address or database URL (0: none).
func portOf(addrOrURL string) uint16 {
	host := addrOrURL
	if u, err := url.Parse(addrOrURL); err == nil && u.Host != "" {
		host = u.Host
		if u.Port() == "" && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
			return 5432
		}
	}
	_, port, err := net.SplitHostPort(host)
	if err != nil {
		return 0
	}
	p, _ := strconv.ParseUint(port, 10, 16)
	return uint16(p)
}

// privateSweepEvery is how often serve and worker look for private
// sandbox directories of sessions that ended on another machine.
const privateSweepEvery = time.Hour
