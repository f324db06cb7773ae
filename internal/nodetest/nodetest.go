// Package nodetest lets a Go test drive agentloop through a JavaScript
// client from npm (a generated TypeScript client, @ag-ui/client, the AI
// SDK, the MCP SDK), the way the people using those clients meet it.
//
// Each Node project lives in its own directory of the repository with a
// committed package-lock.json; .ci/run installs every one of them with
// `npm ci` and sets AGENTLOOP_NODE_TESTS, so there a missing Node.js or
// node_modules fails the test instead of skipping it.
package nodetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Project returns the absolute path of the Node project at rel (relative
// to the repository's root), skipping the test when Node.js or the
// project's installed packages are missing, unless CI asked for Node tests.
func Project(t testing.TB, rel string) string {
	t.Helper()
	dir := filepath.Join(repoRoot(t), rel)
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "no Node.js installed (apt-get install nodejs npm)"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		missing = "the Node packages are not installed: run `npm ci` in " + dir
	}
	if missing == "" {
		return dir
	}
	if os.Getenv("AGENTLOOP_NODE_TESTS") != "" {
		t.Fatal("AGENTLOOP_NODE_TESTS is set but " + missing)
	}
	t.Skip(missing + " (CI installs them and sets AGENTLOOP_NODE_TESTS)")
	return ""
}

// Run runs `node script` in the project's directory with env added to the
// test's environment, and returns what it printed on standard output. A
// script that exits non-zero, or runs past timeout, fails the test with
// everything it printed.
func Run(t testing.TB, dir, script string, timeout time.Duration, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v (deadline %v)\nstdout:\n%s\nstderr:\n%s", script, err, timeout, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("nodetest: cannot find the repository's root")
	}
	// This file is internal/nodetest/nodetest.go.
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}
