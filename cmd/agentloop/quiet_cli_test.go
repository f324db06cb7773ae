package main

import (
	"strings"
	"testing"
)

// --quiet is as quiet against a server (run --server) as it is locally:
// no progress lines, only what a quiet local run prints; without it the
// server's session shows its progress.
func TestQuietAgainstAServer(t *testing.T) {
	script := writeSteps(t, `{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"a"}}]}`, `{"text":"done"}`)
	args := []string{"run", "--yes", "--model", "script:" + script, "write a"}

	local := newCLI(t)
	localOut, localErr, code := local.run("", append([]string{"run", "--quiet", "--dir", t.TempDir()}, args[1:]...)...)
	if code != exitCompleted {
		t.Fatalf("local run --quiet: %d\n%s", code, localErr)
	}
	_, loud, _ := local.run("", append([]string{"run", "--dir", t.TempDir()}, args[1:]...)...)
	if !strings.Contains(loud, "write_file") {
		t.Fatalf("a local run without --quiet shows no progress:\n%s", loud)
	}

	server := newCLI(t)
	s := server.serve("--yes", "--allow-script-models", "--workspaces", t.TempDir())
	remote := &cli{t: t, db: server.db, env: []string{"AGENTLOOP_SERVER=" + s.url}}
	_, remoteLoud, code := remote.run("", args...)
	if code != exitCompleted || !strings.Contains(remoteLoud, "write_file") {
		t.Fatalf("run --server without --quiet: %d, no progress:\n%s", code, remoteLoud)
	}
	remoteOut, remoteErr, code := remote.run("", append([]string{"run", "--quiet"}, args[1:]...)...)
	if code != exitCompleted {
		t.Fatalf("run --server --quiet: %d\n%s", code, remoteErr)
	}
	// Only the closing report, as a quiet local run prints it: the files
	// changed, then the outcome (line by line, up to the first word that
	// differs: the ids and times do).
	heads := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				out = append(out, f[0])
			}
		}
		return out
	}
	if got, want := heads(remoteErr), heads(localErr); strings.Join(got, " ") != strings.Join(want, " ") || !strings.Contains(remoteErr, "Files changed: a.txt\n") {
		t.Errorf("run --server --quiet printed\n%s\nwhere a quiet local run printed\n%s", remoteErr, localErr)
	}
	if remoteOut != localOut {
		t.Errorf("stdout: run --server --quiet %q, local %q", remoteOut, localOut)
	}
}
