// Package sandboxtest helps tests run commands under the sandbox.
package sandboxtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/sandbox"
)

// Backends are the confining backends tests exercise.
var Backends = []sandbox.Backend{sandbox.Landlock, sandbox.Bwrap}

// Require skips the test when backend cannot work here (network policy n)
// — and fails it instead when AGENTLOOP_SANDBOX_TESTS=1 (CI), where every
// backend must be present.
func Require(t testing.TB, backend sandbox.Backend, n sandbox.Network) {
	t.Helper()
	if err := sandbox.Probe(backend, n); err != nil {
		if os.Getenv("AGENTLOOP_SANDBOX_TESTS") == "1" {
			t.Fatalf("the %s sandbox is required here (AGENTLOOP_SANDBOX_TESTS=1): %v", backend, err)
		}
		t.Skipf("the %s sandbox does not work here: %v", backend, err)
	}
}

// Dir is a new directory that a sandboxed command can use as its
// workspace: t.TempDir's parents are private to root (0700), so this one
// lives in a directory the sandbox user may traverse, and belongs to that
// user when the test runs as root. It is removed when the test ends.
func Dir(t testing.TB) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "agentloop-sandboxtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Own(t, dir)
	return dir
}

// Own gives path to the sandbox user (when the test runs as root), so a
// sandboxed command can write it.
func Own(t testing.TB, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	err := filepath.WalkDir(path, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, sandbox.Nobody, sandbox.Nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Policy is a policy for backend with the workspace ws and a private
// directory of its own.
func Policy(t testing.TB, backend sandbox.Backend, ws string, n sandbox.Network) *sandbox.Policy {
	t.Helper()
	priv, err := sandbox.PrivateDir(filepath.Join(filepath.Dir(ws), "private"), "s", sandbox.Nobody, sandbox.Nobody)
	if err != nil {
		t.Fatal(err)
	}
	p := sandbox.Policy{Backend: backend, Network: n, Workspace: ws, Private: priv}.WithDefaults()
	return &p
}
