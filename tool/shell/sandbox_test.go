package shell_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/sandbox/sandboxtest"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
)

// A sandboxed command writes its workspace and private directory, not
// beside them; it runs as a user that is not root; a refusal is a result
// that states the rule.
func TestSandboxedCommand(t *testing.T) {
	for _, b := range sandboxtest.Backends {
		t.Run(string(b), func(t *testing.T) {
			sandboxtest.Require(t, b, sandbox.NoNetwork)
			dir := sandboxtest.Dir(t)
			outside := filepath.Join(filepath.Dir(dir), "outside")
			if err := os.WriteFile(outside, []byte("before"), 0o666); err != nil {
				t.Fatal(err)
			}
			ws, err := workspace.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			cfg := shell.Config{Sandbox: sandboxtest.Policy(t, b, dir, sandbox.NoNetwork)}

			res := run(t, ws, cfg, map[string]any{"command": `id -u; echo in > inside; echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"`})
			if res.IsError {
				t.Fatalf("a command inside the workspace failed: %s", res.Output)
			}
			if strings.Contains(res.Output, "\n0\n") || strings.HasPrefix(strings.TrimSpace(res.Output), "0") {
				t.Errorf("the command runs as root: %s", res.Output)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "inside")); string(got) != "in\n" {
				t.Errorf("the workspace file holds %q", got)
			}

			// bwrap shows the command a view in which the path is its own
			// (private) /tmp; either way the real file stays as it was.
			run(t, ws, cfg, map[string]any{"command": "echo changed > " + outside})
			if got, _ := os.ReadFile(outside); string(got) != "before" {
				t.Errorf("the file outside holds %q", got)
			}
			res = run(t, ws, cfg, map[string]any{"command": "echo changed > /etc/agentloop-sandbox-test"})
			if _, err := os.Stat("/etc/agentloop-sandbox-test"); err == nil {
				os.Remove("/etc/agentloop-sandbox-test")
				t.Fatal("a command wrote /etc")
			}
			if !res.IsError {
				t.Fatalf("a write to /etc succeeded: %s", res.Output)
			}
			if !strings.Contains(res.Output, "[sandbox] The sandbox allows writes only inside the workspace") ||
				!strings.Contains(res.Output, "the network is off") {
				t.Errorf("the refusal does not state the rule:\n%s", res.Output)
			}
		})
	}
}
