package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/testport"
	"github.com/chromedp/chromedp"
)

// agentloopServe is the real `agentloop serve` binary on a fixed loopback
// address, so it can be stopped and started again where the page expects it.
type agentloopServe struct {
	t        *testing.T
	exe, dir string
	addr     string
	cmd      *exec.Cmd
	out      *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func buildAgentloop(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "agentloop")
	if out, err := exec.Command("go", "build", "-o", exe, "../cmd/agentloop").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// freeAddr is an address for a server restarted on it: below the
// ephemeral range, so no outgoing connection takes it meanwhile.
func freeAddr(t *testing.T) string { return "127.0.0.1:" + strconv.Itoa(testport.Port(t)) }

func (s *agentloopServe) start() {
	s.t.Helper()
	s.out = &syncBuffer{}
	s.cmd = exec.Command(s.exe, "serve", "--addr", s.addr, "--db", filepath.Join(s.dir, "s.db"),
		"--workspaces", filepath.Join(s.dir, "ws"), "--yes", "--allow-script-models", "--grace", "2m")
	s.cmd.Env = append(os.Environ(), "HOME="+s.dir, "XDG_DATA_HOME="+s.dir)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	cmd := s.cmd
	// SIGTERM first: the server's checkpoints are git processes of its
	// own, which a SIGKILL would leave writing into the directories the
	// test then removes.
	s.t.Cleanup(func() { stopGently(cmd) })
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + s.addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	s.t.Fatalf("agentloop serve never became ready:\n%s", s.out)
}

// stop sends SIGTERM and waits: sessions pause at a safe point.
func (s *agentloopServe) stop() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM) // again, if it was sent: the same request
	if err := s.cmd.Wait(); err != nil {
		s.t.Fatalf("agentloop serve after SIGTERM: %v\n%s", err, s.out)
	}
}

// The server restarts under a watching page: the page says it lost the
// connection, reconnects from the last event it had, and shows the session
// finishing with every step once.
func TestServerRestartWhileWatching(t *testing.T) {
	exe := chromiumPath(t)
	s := &agentloopServe{t: t, exe: buildAgentloop(t), dir: t.TempDir(), addr: freeAddr(t)}
	// As a server's data directory would be: the sandbox user (when the
	// server runs as root) passes through to the workspaces, lists nothing.
	os.Chmod(filepath.Dir(s.dir), 0o711)
	os.Chmod(s.dir, 0o711)
	s.start()

	var steps []string
	for i := range 12 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}],"delay":"200ms"}`, i, i))
	}
	// The fourth step waits for the test to let it go, so the server is
	// stopped mid-session however fast or slow the machine is.
	steps[3] = `{"tool_calls":[{"name":"execute_command","arguments":{"command":"while [ ! -e release ]; do sleep 0.05; done; printf 3 > f3.txt"}}]}`
	script := filepath.Join(s.dir, "script.json")
	os.WriteFile(script, []byte(`{"steps":[`+strings.Join(append(steps, `{"text":"wrote twelve files"}`), ",")+`]}`), 0o600)
	resp, err := http.Post("http://"+s.addr+"/v1/sessions", "application/json", strings.NewReader(fmt.Sprintf(
		`{"task":"Write twelve files across a restart","model":"script:%s","workspace":"restart"}`, script)))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %v %v\n%s", err, resp, s.out)
	}
	var c struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	defer func() { cancel(); cancelA() }()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, url: "http://" + s.addr, dir: s.dir, ctx: ctx}
	b.run(chromedp.Navigate(b.url+"/#/s/"+c.ID), chromedp.WaitVisible(chromedp.CSS(`.iter[data-n="4"]`)))

	// Stopped at step 4: its command (if it started) finishes within the
	// grace once released, then the session pauses for the next server.
	// The grace is long so that a loaded machine is never what ends it (a
	// command cut by the end of the grace is not run again: its outcome is
	// unknown, and f3.txt would be missing).
	s.cmd.Process.Signal(syscall.SIGTERM)
	os.WriteFile(filepath.Join(s.dir, "ws", "restart", "release"), nil, 0o644)
	s.stop()
	b.waitText("#conn", "reconnecting")
	b.shot("server-restart-reconnecting")
	s.start()
	b.run(chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	for deadline := time.Now().Add(10 * time.Second); b.text("#conn") != ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still says %q after reconnecting", b.text("#conn"))
		}
	}
	b.waitText("#answer", "wrote twelve files")
	// Every step once on the page, every file written.
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#timeline .iter").length`))
	if err != nil || n != 13 {
		t.Fatalf("the timeline shows %d steps (%v), want 13", n, err)
	}
	for i := range 12 {
		if got, err := os.ReadFile(filepath.Join(s.dir, "ws", "restart", fmt.Sprintf("f%d.txt", i))); err != nil || string(got) != fmt.Sprint(i) {
			t.Fatalf("f%d.txt: %q %v", i, got, err)
		}
	}
	if !strings.Contains(s.out.String(), "resumed session") {
		t.Fatalf("the second server did not say it resumed the session:\n%s", s.out)
	}
	b.shot("server-restart-finished")
	s.stop()
}

// stopGently ends a server still running: SIGTERM, then SIGKILL if it has
// not stopped after a while.
func stopGently(cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}
