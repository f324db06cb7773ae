// Package sandbox confines the processes a session starts (commands,
// verification, git, MCP stdio servers) to the session's workspace.
//
// A Policy says what a session's processes may do: write only in the
// workspace and in a private per-session directory (HOME, TMPDIR and the
// build caches point there), read the system's read-only parts and the
// toolchains, reach the network not at all, fully, or only on listed TCP
// ports, and use bounded resources. The command supervisor (tool/shell)
// applies it in the fresh process it starts for every command, before
// the command runs: resource limits, no_new_privs, an unprivileged
// uid/gid when agentloop runs as root, then either Landlock rules on the
// supervisor itself (inherited by the command) or a bubblewrap wrapper.
//
// Invariant: a backend that cannot work here is an error with what to do
// (Probe); nothing falls back to running unconfined.
package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Backend is how a policy is enforced.
type Backend string

const (
	// Landlock confines through the kernel's Landlock LSM (no install).
	Landlock Backend = "landlock"
	// Bwrap confines through bubblewrap's namespaces.
	Bwrap Backend = "bwrap"
	// None runs commands unconfined, as before sandboxing existed. It is
	// only ever chosen explicitly.
	None Backend = "none"
)

// ParseBackend reads a backend name; "" is the platform default.
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(strings.TrimSpace(s)); b {
	case "":
		return DefaultBackend(), nil
	case Landlock, Bwrap, None:
		return b, nil
	}
	return "", fmt.Errorf("unknown sandbox %q: use landlock, bwrap or none", s)
}

// DefaultBackend is landlock on Linux; elsewhere there is no backend yet,
// so the default is none (and saying so is the caller's business).
func DefaultBackend() Backend {
	if runtime.GOOS == "linux" {
		return Landlock
	}
	return None
}

// Policy is what a session's processes may do. The zero value of a field
// means its default (see WithDefaults), except Backend.
type Policy struct {
	Backend Backend `json:"backend"`
	Network Network `json:"network"`
	// Workspace is the only directory of the session's own that is
	// writable (with Private).
	Workspace string `json:"workspace,omitempty"`
	// Private is the session's own directory for HOME, TMPDIR and caches;
	// no other session's processes can reach it.
	Private string `json:"private,omitempty"`
	// ReadOnly are the directories readable (and executable) besides the
	// workspace: the system's and the toolchains'.
	ReadOnly []string `json:"read_only,omitempty"`
	// UID and GID are who commands run as when agentloop runs as root
	// (default 65534, nobody). A process that is not root cannot change
	// user, and commands run as it.
	UID int `json:"uid,omitempty"`
	GID int `json:"gid,omitempty"`
	// Limits are the resource limits of each process.
	Limits Limits `json:"limits"`
}

// Nobody is the default uid and gid commands run as under root.
const Nobody = 65534

// SystemReadOnly are the system directories every sandbox may read.
var SystemReadOnly = []string{"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt"}

// WithDefaults fills what is unset: the uid/gid, the limits, and the
// read-only directories (the system's and the Go toolchain's).
func (p Policy) WithDefaults() Policy {
	if p.UID == 0 {
		p.UID = Nobody
	}
	if p.GID == 0 {
		p.GID = Nobody
	}
	p.Limits = p.Limits.withDefaults()
	if p.ReadOnly == nil {
		p.ReadOnly = DefaultReadOnly()
	}
	return p
}

// DefaultReadOnly is SystemReadOnly plus the Go root when it lives
// elsewhere; directories that do not exist are left out.
func DefaultReadOnly() []string {
	dirs := slices.Clone(SystemReadOnly)
	if root := runtime.GOROOT(); root != "" {
		dirs = append(dirs, root)
	}
	if root := os.Getenv("GOROOT"); root != "" {
		dirs = append(dirs, root)
	}
	var out []string
	for _, d := range dirs {
		d = filepath.Clean(d)
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || covered(out, d) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// covered says whether dir is one of dirs or beneath one.
func covered(dirs []string, dir string) bool {
	for _, d := range dirs {
		if dir == d || strings.HasPrefix(dir, d+"/") {
			return true
		}
	}
	return false
}

// EnvVar carries the encoded policy from agentloop to the supervisor it
// starts; the supervisor removes it before the command runs.
const EnvVar = "AGENTLOOP_SANDBOX_POLICY"

// Encode is the policy as the supervisor reads it back (Decode).
func (p Policy) Encode() string {
	b, _ := json.Marshal(p) // only strings, numbers and slices
	return string(b)
}

// Decode reads an encoded policy.
func Decode(s string) (Policy, error) {
	var p Policy
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("sandbox policy: %v", err)
	}
	if _, err := ParseBackend(string(p.Backend)); err != nil || p.Backend == "" {
		return p, fmt.Errorf("sandbox policy: backend %q", p.Backend)
	}
	return p, nil
}

// Confined says whether the policy confines anything.
func (p Policy) Confined() bool { return p.Backend != None && p.Backend != "" }

// writable are the directories a sandboxed process may change.
func writable(p Policy) []string {
	var dirs []string
	for _, d := range []string{p.Workspace, p.Private} {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}
