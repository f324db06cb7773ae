package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// background is an agentloop process running while the test goes on.
type background struct {
	cmd      *exec.Cmd
	out, err lockedBuffer
	done     chan struct{}
	code     int
}

// lockedBuffer is written by the process's output copier while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (c *cli) start(args ...string) *background {
	c.t.Helper()
	b := &background{cmd: exec.Command(binary, c.withDB(args)...), done: make(chan struct{})}
	b.cmd.Env = append(hermeticEnv(c.t), c.env...)
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.err
	if err := b.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		defer close(b.done)
		err := b.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			b.code = ee.ExitCode()
		} else if err != nil {
			b.code = -1
		}
	}()
	c.t.Cleanup(b.stop)
	return b
}

// stop ends the process if it still runs: SIGTERM first, so that it
// finishes what it is writing into the test's directories (a server's
// workspace checkpoints are git processes of its own, which a SIGKILL
// would leave running while the directories are removed), then SIGKILL
// if it has not stopped after a while.
func (b *background) stop() {
	select {
	case <-b.done:
		return
	default:
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(20 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
	}
}

// wait waits for the process to exit and returns its exit code.
func (b *background) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-b.done:
		return b.code
	case <-time.After(60 * time.Second):
		t.Fatalf("the process did not stop\nstdout %s\nstderr %s", b.out.String(), b.err.String())
		return -1
	}
}

// waitForStatus polls the session list until a session has status.
func waitForStatus(t *testing.T, c *cli, status string, procs ...*background) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, _, _ := c.run("", "sessions", "list", "--json")
		var list []struct{ ID, Status string }
		if json.Unmarshal([]byte(out), &list) == nil && len(list) > 0 && list[0].Status == status {
			return list[0].ID
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, _, _ := c.run("", "sessions", "list")
	for _, p := range procs {
		out += "\n" + p.err.String()
	}
	t.Fatalf("no session became %s:\n%s", status, out)
	return ""
}

// slowCommands scripts n distinct commands, each reply after delay, then an answer.
func slowCommands(t *testing.T, n int, delay string) string {
	var steps []string
	for i := 1; i <= n; i++ {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"execute_command","arguments":{"command":"echo step %d"}}],"delay":%q}`, i, delay))
	}
	steps = append(steps, `{"text":"all steps done"}`)
	return writeSteps(t, steps...)
}

// Pause, reply and terminate from one process while another runs the
// session: the runner honours each at its next safe point and ends with
// the matching status and exit code.
func TestControlsFromAnotherProcess(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	script := slowCommands(t, 12, "250ms")
	a := c.start("run", "--yes", "--max-iterations", "30", "--model", "script:"+script, "--dir", ws, "run the steps")
	id := waitForStatus(t, c, "running", a)

	out, errOut, code := c.run("", "sessions", "reply", id, "look in the docs folder")
	if code != 0 || !strings.Contains(out, "the model sees the message in its next step") {
		t.Fatalf("reply: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = c.run("", "sessions", "pause", id, "lunch")
	if code != 0 || !strings.Contains(out, "pauses after its current step") {
		t.Fatalf("pause: exit %d\n%s\n%s", code, out, errOut)
	}
	if code := a.wait(t); code != exitPaused {
		t.Fatalf("the running process exited %d, want %d (paused)\n%s", code, exitPaused, a.err.String())
	}
	events, _, _ := c.run("", "sessions", "show", "--events", id)
	reply := strings.Index(events, `"content":"look in the docs folder"`)
	paused := strings.Index(events, `"type":"session.paused"`)
	if reply < 0 || paused < reply || !strings.Contains(events[paused:], `"detail":"lunch"`) {
		t.Fatalf("the log lacks the reply before the pause:\n%s", events)
	}

	b := c.start("sessions", "resume", id)
	waitForStatus(t, c, "running", b)
	// The model sees the reply: a model call follows it (before the pause
	// when the pause came later, else after the resume).
	deadline := time.Now().Add(30 * time.Second)
	for {
		events, _, _ = c.run("", "sessions", "show", "--events", id)
		if strings.Contains(events[reply:], `"type":"model.responded"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no model call after the reply:\n%s\n%s", events[reply:], b.err.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, errOut, code = c.run("", "sessions", "terminate", id, "different_approach")
	if code != 0 || !strings.Contains(out, "terminated") {
		t.Fatalf("terminate: exit %d\n%s\n%s", code, out, errOut)
	}
	if code := b.wait(t); code != exitTerminated {
		t.Fatalf("the resumed process exited %d, want %d (terminated)\n%s", code, exitTerminated, b.err.String())
	}
	if s := showJSON(t, c, id); s.Status != "terminated" || s.Reason != "different_approach" {
		t.Fatalf("ended %s (%s)", s.Status, s.Reason)
	}
	// Nothing is left to control.
	if _, errOut, code := c.run("", "sessions", "pause", id); code == 0 || !strings.Contains(errOut, "has ended") {
		t.Fatalf("pause after the end: exit %d %s", code, errOut)
	}
}

func TestDeleteSession(t *testing.T) {
	c := newCLI(t)
	if _, errOut, code := c.run("", "run", "--model", "script:../../examples/scripts/hello.json", "--dir", t.TempDir(), "say hi"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	id := sessionID(t, c)
	if out, errOut, code := c.run("", "sessions", "delete", id); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("delete: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := c.run("", "sessions", "show", id); code == 0 || !strings.Contains(errOut, "not found") {
		t.Fatalf("show after delete: %d %s", code, errOut)
	}
	if _, errOut, code := c.run("", "sessions", "delete", id); code == 0 || !strings.Contains(errOut, "not found") {
		t.Fatalf("delete twice: %d %s", code, errOut)
	}
}

// resume and recover from a second process while the first runs the
// session: the second refuses or leaves it alone, the first finishes, and
// no model call or command runs twice.
func TestSecondProcessCannotTakeALiveSession(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	var steps []string
	for i := 1; i <= 8; i++ {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"execute_command","arguments":{"command":"echo %d >> ran.txt"}}],"delay":"200ms"}`, i))
	}
	steps = append(steps, `{"text":"all steps done"}`)
	a := c.start("run", "--yes", "--max-iterations", "20", "--model", "script:"+writeSteps(t, steps...), "--dir", ws, "run the steps")
	id := waitForStatus(t, c, "running", a)

	out, errOut, code := c.run("", "sessions", "resume", id)
	if code == 0 || !strings.Contains(out+errOut, "already running") {
		t.Fatalf("resume of a live session: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = c.run("", "sessions", "recover")
	if code != 0 || !strings.Contains(errOut, "no session was left running") {
		t.Fatalf("recover with a live session: exit %d\n%s", code, errOut)
	}
	if code := a.wait(t); code != exitCompleted {
		t.Fatalf("the first process exited %d\n%s", code, a.err.String())
	}
	events, _, _ := c.run("", "sessions", "show", "--events", id)
	if n := strings.Count(events, `"type":"model.responded"`); n != 9 {
		t.Fatalf("%d model replies, want 9 (one per script step)", n)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "ran.txt"))
	if lines := strings.Count(string(b), "\n"); lines != 8 {
		t.Fatalf("the commands ran %d times, want 8:\n%s", lines, b)
	}
}
