package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/sandbox/sandboxtest"
)

// mcpServerEnv makes this test binary an MCP stdio server (see TestMain):
// a server whose tools try what a hostile or compromised server would.
const mcpServerEnv = "E2E_MCP_ESCAPER" // not AGENTLOOP_…: the sandbox drops those

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerEnv) == "1" {
		if err := escapingServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	// The binary the tests built (agentloopBinary) goes with them: 64 MB
	// left in the temporary directory by every run otherwise.
	if binaryPath != "" {
		os.RemoveAll(filepath.Dir(binaryPath))
	}
	os.Exit(code)
}

// pathIn names its file "what": a key the in-process check of path
// arguments does not read, as a server that picks its own paths would —
// only the sandbox stands in the way.
type pathIn struct {
	Path    string `json:"what"`
	Content string `json:"content,omitempty"`
}

type portIn struct {
	Port int `json:"port"`
}

func mcpText(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// escapingServer reads, writes and connects wherever it is asked: the
// sandbox it was started in must stop it.
func escapingServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "escaper", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "read", Description: "Read a file."}, func(_ context.Context, _ *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, any, error) {
		b, err := os.ReadFile(in.Path)
		if err != nil {
			return mcpText("refused: " + err.Error()), nil, nil
		}
		return mcpText("READ " + string(b)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "write", Description: "Write a file."}, func(_ context.Context, _ *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, any, error) {
		if err := os.WriteFile(in.Path, []byte(in.Content), 0o644); err != nil {
			return mcpText("refused: " + err.Error()), nil, nil
		}
		return mcpText("WROTE " + in.Path), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "connect", Description: "Connect to a loopback port."}, func(_ context.Context, _ *sdk.CallToolRequest, in portIn) (*sdk.CallToolResult, any, error) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", in.Port), 3*time.Second)
		if err != nil {
			return mcpText("refused: " + err.Error()), nil, nil
		}
		c.Close()
		return mcpText("CONNECTED"), nil, nil
	})
	return s
}

// An MCP stdio server runs in the session's sandbox like a command: a
// server that tries to read another workspace, the database, the root's
// files or agentloop's environment, to write outside its workspace or to
// reach a loopback port gets nowhere, under each backend.
func TestSandboxedMCPServerCannotEscape(t *testing.T) {
	for _, b := range sandboxtest.Backends {
		t.Run(string(b), func(t *testing.T) {
			sandboxtest.Require(t, b, sandbox.NoNetwork)
			bin := agentloopBinary(t)
			w := newEscapeWorld(t)
			// The server's program lives in the workspace (a project's own
			// server): outside it, the sandbox would not let it run at all.
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			server := filepath.Join(w.alpha, "escaper")
			copyFile(t, self, server)
			sandboxtest.Own(t, server)
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf("profiles:\n  mcp:\n    mcp_servers:\n      files:\n        command: %s\n        env:\n          %s: \"1\"\n          GORACE: atexit_sleep_ms=0\n        cwd: %s\n", server, mcpServerEnv, w.alpha)), 0o644)
			beta := filepath.Join(w.beta, "secret.txt")
			attempts := []struct{ tool, args string }{
				{"files__read", `{"what":"` + beta + `"}`},
				{"files__read", `{"what":"../` + filepath.Base(w.beta) + `/secret.txt"}`},
				{"files__read", `{"what":"` + w.db + `"}`},
				{"files__read", `{"what":"/root/.ssh/id_ed25519"}`},
				{"files__read", `{"what":"/proc/1/environ"}`},
				{"files__read", `{"what":"/proc/self/root` + beta + `"}`},
				{"files__write", `{"what":"` + beta + `","content":"pwned"}`},
				{"files__write", `{"what":"/etc/agentloop-escape","content":"pwned"}`},
				{"files__write", `{"what":"` + w.shared + `","content":"pwned"}`},
				{"files__connect", fmt.Sprintf(`{"port":%d}`, w.port)},
			}
			var steps []string
			for _, a := range attempts {
				steps = append(steps, `{"tool_calls":[{"name":"`+a.tool+`","arguments":`+a.args+`}]}`)
			}
			steps = append(steps, `{"text":"done"}`)
			script := filepath.Join(t.TempDir(), "script.json")
			os.WriteFile(script, []byte(`{"steps":[`+strings.Join(steps, ",")+`]}`), 0o644)
			cmd := exec.Command(bin, "run", "--yes", "--quiet", "--sandbox", string(b), "--network", "none", "--config", cfg, "--profile", "mcp",
				"--db", w.db, "--dir", w.alpha, "--max-iterations", fmt.Sprint(len(attempts)+2), "--no-progress", "0", "--model", "script:"+script, "escape through MCP")
			cmd.Env = append(os.Environ(), "AGENTLOOP_SANDBOX=", canary[:12]+"="+canary, "AGENTLOOP_CONFIG=", "XDG_CONFIG_HOME="+t.TempDir())
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("agentloop run: %v\n%s\n%s", err, out.String(), stderr.String())
			}
			results := w.toolResults(t, bin)
			if len(results) != len(attempts) {
				t.Fatalf("%d tool results for %d attempts:\n%s", len(results), len(attempts), strings.Join(results, "\n"))
			}
			blocked := 0
			for i, a := range attempts {
				res := results[i]
				// Judged by what would show only from outside: another
				// tenant's secret, agentloop's canary, the database's bytes, a
				// connection; writes by the files outside (nothingChanged).
				// Under bwrap /proc/1 and /tmp are the sandbox's own.
				if strings.Contains(res, w.secret) || strings.Contains(res, canary) || strings.Contains(res, "SQLite format") || strings.Contains(res, "CONNECTED") {
					t.Errorf("attempt %d %s %s escaped: %s", i, a.tool, a.args, res)
					continue
				}
				blocked++
			}
			t.Logf("%s: %d of %d attempts by an MCP server blocked", b, blocked, len(attempts))
			w.nothingChanged(t)
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
