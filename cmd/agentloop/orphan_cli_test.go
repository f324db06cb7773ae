package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A command the agent runs dies with agentloop: killed with SIGKILL mid-
// command, it does not go on changing the workspace behind the resumed
// session's back.
func TestCommandsDieWithTheirOwner(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"execute_command","arguments":"{\"command\":\"echo go > started.txt; (sleep 2; echo late > late.txt) & sleep 2; echo late > late2.txt\"}"}}]},"finish_reason":"tool_calls"}]}`)
	}))
	defer srv.Close()
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=k")
	ws := t.TempDir()
	b := c.start("run", "--dir", ws, "--yes", "--model", "openai/m", "--base-url", srv.URL+"/v1", "run the slow command")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(ws, "started.txt")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never started\n%s", b.err.String())
		}
	}
	b.cmd.Process.Signal(syscall.SIGKILL)
	b.wait(t)
	time.Sleep(3500 * time.Millisecond) // longer than the command would have run
	for _, f := range []string{"late.txt", "late2.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s was written after agentloop was killed: the command outlived it", f)
		}
	}
}
