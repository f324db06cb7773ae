package sandbox

import (
	"path/filepath"
	"strings"
)

// privateVars point a command's home, temporary files and build caches
// into the session's private directory (relative to it).
var privateVars = [][2]string{
	{"HOME", "home"},
	{"TMPDIR", "tmp"},
	{"XDG_CACHE_HOME", "cache"},
	{"XDG_CONFIG_HOME", "home/.config"},
	{"XDG_DATA_HOME", "home/.local/share"},
	{"GOCACHE", "cache/go-build"},
	{"GOPATH", "go"},
	{"GOMODCACHE", "go/pkg/mod"},
	{"npm_config_cache", "cache/npm"},
	{"PIP_CACHE_DIR", "cache/pip"},
	{"CARGO_HOME", "cargo"},
}

// PrivateSubdirs are the directories made in a private directory.
var PrivateSubdirs = []string{"home", "tmp", "cache", "go"}

// Environ is env with the private directory's variables set and
// agentloop's own variables removed. env is already reduced to an
// allowlist by the tool that starts the command; this only makes sure
// nothing points outside the sandbox.
func (p Policy) Environ(env []string) []string {
	out := make([]string, 0, len(env)+len(privateVars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "AGENTLOOP_") || p.Private != "" && overridden(name) {
			continue
		}
		out = append(out, kv)
	}
	if p.Private != "" {
		for _, v := range privateVars {
			out = append(out, v[0]+"="+filepath.Join(p.Private, v[1]))
		}
	}
	return out
}

func overridden(name string) bool {
	for _, v := range privateVars {
		if v[0] == name {
			return true
		}
	}
	return false
}
