//go:build unix

package mcp

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

// stdioConfig runs this test binary as a stdio MCP server (see TestMain).
func stdioConfig(t *testing.T) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// GORACE: a race-enabled server would otherwise linger 1s at exit.
	env := map[string]string{serverEnv: "1", "GORACE": "atexit_sleep_ms=0"}
	return ServerConfig{Name: "stdio", Command: exe, Env: env, Dir: t.TempDir()}
}

func connectStdio(t *testing.T, cfg ServerConfig) *Server {
	t.Helper()
	s, err := Connect(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func call(t *testing.T, s *Server, name, args string) tool.Result {
	t.Helper()
	res, err := byName(t, s.Tools(), name).Call(t.Context(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func serverPID(t *testing.T, s *Server) int {
	t.Helper()
	res := call(t, s, "stdio__pid", `{}`)
	pid, err := strconv.Atoi(res.Output)
	if err != nil || res.IsError {
		t.Fatalf("pid: %+v", res)
	}
	return pid
}

func TestStdioServer(t *testing.T) {
	t.Setenv("AGENTLOOP_TEST_TOKEN", "tok-123")
	t.Setenv("OPENAI_API_KEY", "must-not-leak")
	cfg := stdioConfig(t)
	cfg.Env["GIVEN_TOKEN"] = "${AGENTLOOP_TEST_TOKEN}"
	s := connectStdio(t, cfg)

	if res := call(t, s, "stdio__echo", `{"text":"over stdio"}`); res.IsError || res.Output != "over stdio" {
		t.Fatalf("echo: %+v", res)
	}
	for _, tc := range []struct{ name, want string }{
		{"GIVEN_TOKEN", "tok-123"},    // ${NAME} expanded from our environment
		{"OPENAI_API_KEY", "<unset>"}, // not inherited
		{"PATH", os.Getenv("PATH")},   // inherited
		{serverEnv, "1"},              // given
	} {
		if res := call(t, s, "stdio__env", `{"name":"`+tc.name+`"}`); res.Output != tc.want {
			t.Errorf("server sees %s=%q, want %q", tc.name, res.Output, tc.want)
		}
	}
	if _, err := tool.NewRegistry(s.Tools()...); err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
}

func TestStdioServerKilled(t *testing.T) {
	cfg := stdioConfig(t)
	cfg.Reconnects = -1
	s := connectStdio(t, cfg)
	pid := serverPID(t, s)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, s)
	want := `MCP server "stdio" is not running (exited: signal: killed); its tools are unavailable`
	for range 2 {
		res := call(t, s, "stdio__echo", `{"text":"x"}`)
		if !res.IsError || res.Output != want {
			t.Fatalf("after kill: %+v\nwant %q", res, want)
		}
	}
}

func TestStdioServerDiesDuringCall(t *testing.T) {
	cfg := stdioConfig(t)
	cfg.Reconnects = -1
	s := connectStdio(t, cfg)
	res := call(t, s, "stdio__crash", `{}`)
	want := `MCP server "stdio" is not running (exited: exit status 3; last error output: fatal: crashing on request); its tools are unavailable`
	if !res.IsError || res.Output != want {
		t.Fatalf("crash: %+v\nwant %q", res, want)
	}
	if res := call(t, s, "stdio__echo", `{"text":"x"}`); !res.IsError || res.Output != want {
		t.Fatalf("next call: %+v", res)
	}
}

func TestStdioServerRestartedOnce(t *testing.T) {
	s := connectStdio(t, stdioConfig(t))
	first := serverPID(t, s)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, s)
	second := serverPID(t, s) // restarts the server
	if second == first {
		t.Fatalf("same pid %d after restart", first)
	}
	if err := syscall.Kill(second, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, s)
	res := call(t, s, "stdio__echo", `{"text":"x"}`)
	if !res.IsError || !strings.Contains(res.Output, "is not running (exited: signal: killed)") {
		t.Fatalf("after the second kill: %+v", res)
	}
}

func TestStdioCloseEndsProcess(t *testing.T) {
	s := connectStdio(t, stdioConfig(t))
	pid := serverPID(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close reaps the process: it no longer exists.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d after Close: kill -0 = %v", pid, err)
	}
	res := call(t, s, "stdio__echo", `{"text":"x"}`)
	if !res.IsError || !strings.Contains(res.Output, "closed") {
		t.Fatalf("after Close: %+v", res)
	}
}

func TestStdioStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		want []string
	}{
		{"missing command", ServerConfig{Name: "gone", Command: "/nonexistent/agentloop-mcp-server"}, []string{`MCP server "gone": starting /nonexistent/agentloop-mcp-server`, "no such file or directory"}},
		{"exits at once", ServerConfig{Name: "quits", Command: "/bin/sh", Args: []string{"-c", "echo 'config file missing' >&2; exit 2"}}, []string{`MCP server "quits": starting /bin/sh -c`, "config file missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Connect(t.Context(), tc.cfg)
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
