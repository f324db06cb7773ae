package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/sandbox"
)

// A profile's sandbox_limits bound its commands: a 2 MB file under a
// 1 MB limit is stopped, and the model is told the limit.
func TestProfileSandboxLimits(t *testing.T) {
	if sandbox.LandlockABI() == 0 {
		if os.Getenv("AGENTLOOP_SANDBOX_TESTS") == "1" {
			t.Fatal("AGENTLOOP_SANDBOX_TESTS=1, yet Landlock does not work here")
		}
		t.Skip("no Landlock here")
	}
	c := newCLI(t)
	base := t.TempDir()
	os.Chmod(base, 0o711)
	project := filepath.Join(base, "project")
	os.Mkdir(project, 0o755)
	if os.Geteuid() == 0 {
		os.Chown(project, 4242, 4242) // a user's project: its commands run as that user
	}
	cfg := filepath.Join(base, "config.yaml")
	os.WriteFile(cfg, []byte("profiles:\n  small:\n    sandbox_limits:\n      file_size_mb: 1\n"), 0o644)
	script := writeScript(t, `{"steps":[{"tool_calls":[{"name":"execute_command","arguments":{"command":"dd if=/dev/zero of=big bs=1M count=2"}}]},`+
		`{"text":"done","expect":{"last_message_contains":"1 MB files"}}]}`)
	if _, stderr, code := c.run("", "run", "--config", cfg, "--profile", "small", "--sandbox", "landlock", "--yes", "--model", "script:"+script, "--dir", project, "write"); code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	if fi, err := os.Stat(filepath.Join(project, "big")); err == nil && fi.Size() > 1<<20 {
		t.Fatalf("a %d-byte file was written under a 1 MB limit", fi.Size())
	}
	if out, stderr, code := c.run("", "config", "check", cfg); code != 0 || strings.Contains(out+stderr, "unknown") {
		t.Fatalf("config check: %d %s %s", code, out, stderr)
	}
	os.WriteFile(cfg, []byte("profiles:\n  small:\n    sandbox_limits:\n      file_size_mb: 0\n"), 0o644)
	if out, stderr, code := c.run("", "config", "check", cfg); code == 0 || !strings.Contains(out+stderr, "file_size_mb must be at least 1") {
		t.Fatalf("config check of a zero limit: %d %s %s", code, out, stderr)
	}
}
