package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/temporal/temporaltest"
)

// Sessions run by Temporal workers keep checkpoints where --checkpoints
// says; with one directory shared by the worker and the server, the
// server forks a session a worker ran, and a worker runs the fork to
// completion in its own workspace.
func TestForkOnTemporal(t *testing.T) {
	hostPort := temporaltest.Start(t)
	c := newCLI(t)
	c.db = pgtest.URL(t)
	ws := t.TempDir()
	shared := filepath.Join(t.TempDir(), "checkpoints")
	w := c.start("worker", "--temporal", hostPort, "--db", c.db, "--task-queue", "forks", "--checkpoints", shared)
	defer func() { w.cmd.Process.Signal(syscall.SIGTERM); w.wait(t) }()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(w.err.String(), "agentloop worker: running"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not start:\n%s", w.err.String())
		}
	}
	s := c.serve("--allow-script-models", "--engine", "temporal", "--temporal", hostPort, "--task-queue", "forks", "--workspaces", ws, "--yes", "--checkpoints", shared)
	defer func() { s.cmd.Process.Signal(syscall.SIGTERM); s.wait(t) }()

	var steps []string
	for i := range 6 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}]}`, i, i))
	}
	model := writeScript(t, `{"steps":[`+strings.Join(append(steps, `{"text":"wrote six files"}`), ",")+`]}`)
	var created struct{ ID string }
	if code := apiCall(t, "POST", s.url+"/v1/sessions", fmt.Sprintf(`{"task":"write six files","model":"script:%s","workspace":"six"}`, model), &created); code != 201 {
		t.Fatalf("create: %d\n%s", code, s.errText())
	}
	id := created.ID
	waitStatus := func(id, want string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); statusOf(t, s.url, id) != want; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("session %s is %s, want %s\nworker: %s", id, statusOf(t, s.url, id), want, w.err.String())
			}
		}
	}
	waitStatus(id, "completed")
	checkpoints := 0
	for _, e := range allEvents(t, s.url, id) {
		if e.Type == "workspace.checkpointed" {
			checkpoints++
		}
	}
	if checkpoints != 7 {
		t.Fatalf("the worker recorded %d checkpoints, want 7 (as found, then after each of 6 steps)", checkpoints)
	}
	if _, err := os.Stat(filepath.Join(shared, id+".git")); err != nil {
		t.Fatalf("the worker's checkpoints are not in the shared directory: %v", err)
	}

	var fork struct{ ID string }
	if code := apiCall(t, "POST", s.url+"/v1/sessions/"+id+"/fork", `{"at":3}`, &fork); code != 201 {
		t.Fatalf("fork: %d\n%s", code, s.errText())
	}
	waitStatus(fork.ID, "completed")
	var st struct {
		Answer    string
		Workspace string
	}
	apiCall(t, "GET", s.url+"/v1/sessions/"+fork.ID, "", &st)
	want := map[string]string{}
	for i := range 6 {
		want[fmt.Sprintf("f%d.txt", i)] = fmt.Sprint(i)
	}
	if got := readTree(t, st.Workspace); st.Answer != "wrote six files" || st.Workspace != filepath.Join(ws, "six-fork-"+fork.ID) || !reflect.DeepEqual(got, want) {
		t.Fatalf("the fork: answer %q in %s holding %v", st.Answer, st.Workspace, got)
	}
}
