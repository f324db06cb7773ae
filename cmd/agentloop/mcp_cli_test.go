package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpStdio connects the Go SDK's client to `agentloop mcp ARGS` run as a
// subprocess, as an MCP client application starts it.
func (c *cli) mcpStdio(env []string, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	c.t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Env = append(append(hermeticEnv(c.t), c.env...), env...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(c.t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		c.t.Fatalf("connecting to agentloop mcp: %v\nstderr: %s", err, stderr.String())
	}
	c.t.Cleanup(func() {
		cs.Close()
		if c.t.Failed() {
			c.t.Logf("agentloop mcp's stderr:\n%s", stderr.String())
		}
	})
	return cs, cmd
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var msg strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			msg.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return nil, msg.String()
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out, ""
}

// agentloop mcp over stdio: sessions run in it, recorded in the local
// database the other commands read; when the client goes away, a session
// still running pauses and the process exits.
func TestMCPStdioThroughTheBinary(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	hello := writeScript(t, `{"steps":[{"text":"hi from the binary"}]}`)
	cs, cmd := c.mcpStdio(nil, "--db", c.db, "--dir", ws, "--allow-script-models")

	s, msg := mcpCall(t, cs, "start_session", map[string]any{"task": "say hi", "model": "script:" + hello, "wait_seconds": 60})
	if msg != "" || s["status"] != "completed" || s["answer"] != "hi from the binary" || s["workspace"] != ws {
		t.Fatalf("start_session: %v %s", s, msg)
	}
	out, _, code := c.run("", "sessions", "show", "--json", s["id"].(string))
	if code != 0 || !strings.Contains(out, `"answer": "hi from the binary"`) {
		t.Fatalf("sessions show: %d %s", code, out)
	}

	// An approval: the write waits for decide_approval.
	write := writeScript(t, `{"steps":[{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"A"}}]},{"text":"wrote a.txt"}]}`)
	s, msg = mcpCall(t, cs, "start_session", map[string]any{"task": "write", "model": "script:" + write, "wait_seconds": 60})
	if msg != "" || s["status"] != "waiting" || s["reason"] != "approval" {
		t.Fatalf("before approval: %v %s", s, msg)
	}
	if _, msg := mcpCall(t, cs, "start_session", map[string]any{"task": "x", "approval": "auto"}); !strings.Contains(msg, `approval "auto" refused`) {
		t.Errorf("approval auto without --yes: %q", msg)
	}
	call := s["pending_approvals"].([]any)[0].(map[string]any)["call_id"]
	if _, msg := mcpCall(t, cs, "decide_approval", map[string]any{"id": s["id"], "call_id": call, "approve": true}); msg != "" {
		t.Fatal(msg)
	}
	if s, _ = mcpCall(t, cs, "wait_session", map[string]any{"id": s["id"], "timeout_seconds": 60}); s["status"] != "completed" {
		t.Fatalf("after approval: %v", s)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "A" {
		t.Errorf("a.txt: %q %v", b, err)
	}

	// A session whose model call does not return by itself, when the
	// client goes away.
	slow := writeScript(t, `{"steps":[{"text":"late","delay":"1h"},{"text":"resumed"}]}`)
	s, _ = mcpCall(t, cs, "start_session", map[string]any{"task": "think", "model": "script:" + slow})
	id := s["id"].(string)
	if err := cs.Close(); err != nil || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("agentloop mcp did not exit cleanly when the client went away: %v %v", err, cmd.ProcessState)
	}
	c.pausedByShutdown(id)
}

// pausedByShutdown checks that the session stopped at a safe point as its
// process stopped, to be resumed.
func (c *cli) pausedByShutdown(id string) {
	c.t.Helper()
	out, _, _ := c.run("", "sessions", "show", "--json", id)
	var st struct{ Status, Reason string }
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Status != "paused" || st.Reason != "shutdown" {
		c.t.Fatalf("the session agentloop mcp ran when it stopped: %v %s", err, out)
	}
}

// An MCP client that stops its server with SIGTERM (as clients do when
// closing stdin is not enough) gets the same: sessions pause, exit 0.
func TestMCPStdioSIGTERM(t *testing.T) {
	c := newCLI(t)
	slow := writeScript(t, `{"steps":[{"text":"late","delay":"1h"}]}`)
	cs, cmd := c.mcpStdio(nil, "--db", c.db, "--dir", t.TempDir(), "--allow-script-models")
	s, msg := mcpCall(t, cs, "start_session", map[string]any{"task": "think", "model": "script:" + slow})
	if msg != "" {
		t.Fatal(msg)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The server is gone: the transport's Close reaps it.
	cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("after SIGTERM: %v", cmd.ProcessState)
	}
	c.pausedByShutdown(s["id"].(string))
}

func TestMCPUsage(t *testing.T) {
	c := newCLI(t)
	if _, stderr, code := c.run("", "mcp", "extra"); code != exitUsage || !strings.Contains(stderr, "stdin/stdout") {
		t.Errorf("an argument: %d %s", code, stderr)
	}
	if _, stderr, code := c.run("", "mcp", "--dir", filepath.Join(t.TempDir(), "nosuch")); code != exitUsage || !strings.Contains(stderr, "not a directory") {
		t.Errorf("a missing --dir: %d %s", code, stderr)
	}
	if _, stderr, code := c.run("", "mcp", "-h"); code != 0 || !strings.Contains(stderr, "agentloop://sessions/{id}/events") {
		t.Errorf("-h: %d %s", code, stderr)
	}
}
