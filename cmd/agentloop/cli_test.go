package main

import (
	"bytes"
	"encoding/json"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var binary string

// TestMain builds the real binary once; tests run it as a user would.
func TestMain(m *testing.M) {
	if os.Geteuid() == 0 && os.Getenv("AGENTLOOP_SANDBOX") == "" {
		// As root, sandboxed commands run as nobody, who cannot enter the
		// tests' root-private temporary directories; these tests are about
		// other things and run commands unconfined. Run as another user,
		// they run under the default sandbox. The sandbox's own tests are
		// in sandbox_cli_test.go and e2e/sandbox_escape_test.go.
		os.Setenv("AGENTLOOP_SANDBOX", "none")
		os.Setenv("AGENTLOOP_UNSAFE_NO_SANDBOX", "1")
	}
	dir, err := os.MkdirTemp("", "agentloop-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "agentloop")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := pgtest.Main(m) // stops the PostgreSQL server a test started
	os.RemoveAll(dir)
	os.Exit(code)
}

type cli struct {
	t   *testing.T
	db  string
	env []string // extra environment, after the hermetic one
	dir string   // working directory; empty: the test's
}

func newCLI(t *testing.T) *cli { return &cli{t: t, db: filepath.Join(t.TempDir(), "s.db")} }

// run runs agentloop with args (and --db) and returns stdout, stderr and the exit code.
func (c *cli) run(stdin string, args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(binary, c.withDB(args)...)
	cmd.Env = append(hermeticEnv(c.t), c.env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Dir = c.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func (c *cli) withDB(args []string) []string {
	if len(args) == 0 {
		return args
	}
	switch args[0] {
	case "run":
		return append([]string{"run", "--db", c.db}, args[1:]...)
	case "sessions":
		if len(args) > 1 {
			return append([]string{"sessions", args[1], "--db", c.db}, args[2:]...)
		}
	}
	return args
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func workspaceFromFixture(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if out, err := exec.Command("cp", "-r", "../../examples/scripts/fix-test/.", ws).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return ws
}

func sessionID(t *testing.T, c *cli) string {
	t.Helper()
	out, _, _ := c.run("", "sessions", "list", "--json")
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) == 0 {
		t.Fatalf("sessions list: %v %q", err, out)
	}
	return list[0].ID
}

func TestRunFixTestEndToEnd(t *testing.T) {
	c := newCLI(t)
	ws := workspaceFromFixture(t)
	out, errOut, code := c.run("", "run", "--yes", "--diff", "--verify", "go test ./...", "--model", "script:../../examples/scripts/fix-test.json", "--dir", ws, "Fix the failing test")
	if code != exitCompleted {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "All tests pass") || !strings.Contains(errOut, "Files changed: calc.go") || !strings.Contains(errOut, "Verification: pass") ||
		!strings.Contains(errOut, "-\treturn a - b") || !strings.Contains(errOut, "+\treturn a + b") {
		t.Fatalf("stdout %q\nstderr %q", out, errOut)
	}
	src, _ := os.ReadFile(filepath.Join(ws, "calc.go"))
	if !strings.Contains(string(src), "return a + b") {
		t.Fatalf("calc.go not fixed:\n%s", src)
	}
	id := sessionID(t, c)
	show, _, code := c.run("", "sessions", "show", id)
	for _, want := range []string{"status:    completed (completed)", "── Step 5", "execute_command", "edit_file", "input +"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	if code != 0 {
		t.Fatalf("show exit %d", code)
	}
	events, _, _ := c.run("", "sessions", "show", "--events", id)
	if n := strings.Count(events, "\n"); n < 20 || !strings.Contains(events, `"type":"tool.started"`) {
		t.Fatalf("%d events:\n%s", n, events)
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		script string
		args   []string
		want   int
		stderr string
	}{
		{"completed", `{"steps":[{"text":"hi"}]}`, nil, exitCompleted, "completed (completed)"},
		{"limit", `{"steps":[{"tool_calls":[{"name":"list_dir","arguments":{}}]},{"text":"partial"}]}`, []string{"--max-iterations", "1"}, exitLimit, "(max_iterations)"},
		{"model error", `{"steps":[{"error":{"kind":"fatal","message":"HTTP 401 bad key"}}]}`, nil, exitFailed, "HTTP 401 bad key"},
		{"retries ran out", `{"steps":[{"error":{"kind":"retryable","message":"HTTP 503"}}]}`, nil, exitPaused, "agentloop sessions resume"},
		{"approval needed", `{"steps":[{"tool_calls":[{"name":"write_file","arguments":{"path":"a","content":"x"}}]}]}`, nil, exitPaused, "agentloop sessions approve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			args := append([]string{"run", "--model", "script:" + writeScript(t, tt.script), "--dir", t.TempDir()}, tt.args...)
			_, errOut, code := c.run("", append(args, "task")...)
			if code != tt.want || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d (want %d)\n%s", code, tt.want, errOut)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{{}, {"bogus"}, {"run"}, {"run", "--complexity", "huge", "x"}, {"run", "--no-such-flag", "x"}, {"sessions"}, {"sessions", "show"}} {
		if _, errOut, code := c.run("", args...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if out, _, code := c.run("", "version"); code != 0 || !strings.HasPrefix(out, "agentloop ") {
		t.Errorf("version: %d %q", code, out)
	}
}

func TestBadScriptNamesFileAndStep(t *testing.T) {
	c := newCLI(t)
	p := writeScript(t, `{"steps":[{"text":"ok"},{"tool_calls":[{"name":"x","arguments":[1]}]}]}`)
	_, errOut, code := c.run("", "run", "--model", "script:"+p, "task")
	if code != exitFailed || !strings.Contains(errOut, p) || !strings.Contains(errOut, "step 2") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestApproveAndDenyFromTheCommandLine(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	script := writeScript(t, `{"steps":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"A"}}]},
		{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"B"}}]},
		{"text":"wrote a, not b"}]}`)
	_, errOut, code := c.run("", "run", "--model", "script:"+script, "--dir", ws, "write files")
	if code != exitPaused {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	id := sessionID(t, c)
	list, _, _ := c.run("", "sessions", "approvals")
	f := strings.Fields(list[strings.Index(list, "approve: "):])
	// f: approve: agentloop sessions approve ID CALL HASH
	call, hash := f[5], f[6]
	if _, errOut, code := c.run("", "sessions", "approve", id, call, "0000000000000000"); code != exitFailed || !strings.Contains(errOut, "arguments changed") {
		t.Fatalf("forged hash: %d %s", code, errOut)
	}
	_, errOut, code = c.run("", "sessions", "approve", id, call, hash)
	if code != exitPaused {
		t.Fatalf("approve: exit %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "A" {
		t.Fatalf("a.txt = %q", b)
	}
	list, _, _ = c.run("", "sessions", "approvals", id)
	f = strings.Fields(list[strings.Index(list, "deny: "):])
	out, errOut, code := c.run("", "sessions", "deny", id, f[5], f[6], "not", "b")
	if code != exitCompleted || !strings.Contains(out, "wrote a, not b") {
		t.Fatalf("deny: exit %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatal("b.txt was written despite the denial")
	}
}

func TestCtrlCPausesThenResume(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[
		{"tool_calls":[{"name":"list_dir","arguments":{}}]},
		{"text":"slow thought","delay":"3s"}]}`)
	cmd := exec.Command(binary, c.withDB([]string{"run", "--model", "script:" + script, "--dir", t.TempDir(), "task"})...)
	cmd.Env = hermeticEnv(t)
	var errb syncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the first step is durable, then press Ctrl-C.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(errb.String(), "list_dir") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no progress: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitPaused || !strings.Contains(errb.String(), "paused (interrupted)") {
		t.Fatalf("%v: %s", err, errb.String())
	}
	id := sessionID(t, c)
	// The interrupted model call is redone: the log holds one model call, so
	// the scripted model replays from its second step.
	out, errOut, code := c.run("", "sessions", "resume", id)
	if code != exitCompleted || !strings.Contains(out, "slow thought") {
		t.Fatalf("resume: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := c.run("", "sessions", "resume", id); code != exitFailed || !strings.Contains(errOut, "ended") {
		t.Fatalf("second resume: %d %s", code, errOut)
	}
}

func TestParseToolCallsCommand(t *testing.T) {
	c := newCLI(t)
	out, _, code := c.run(`Let me look. <tool_call>{"name": "read_file", "arguments": {"path": "a.go"}}</tool_call>`, "parse-toolcalls", "--tools", "read_file")
	var got struct {
		Calls []struct {
			Name      string
			Arguments map[string]any
		}
		Content, Format string
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Calls) != 1 || got.Calls[0].Name != "read_file" || got.Calls[0].Arguments["path"] != "a.go" || got.Format != "hermes" {
		t.Fatalf("%d %q", code, out)
	}
}

func TestPromptTokens(t *testing.T) {
	c := newCLI(t)
	out, errOut, code := c.run("", "prompt", "--tokens", "--dir", t.TempDir())
	if code != 0 || !strings.Contains(out, "tokens (cl100k_base)") {
		t.Fatalf("%d %q %q", code, out, errOut)
	}
}

func TestTerminateAndList(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[{"error":{"kind":"retryable","message":"HTTP 503"}}]}`)
	c.run("", "run", "--model", "script:"+script, "--dir", t.TempDir(), "task")
	id := sessionID(t, c)
	out, errOut, code := c.run("", "sessions", "terminate", id, "different_approach")
	if code != 0 || !strings.Contains(out, "terminated") {
		t.Fatalf("%d %s %s", code, out, errOut)
	}
	list, _, _ := c.run("", "sessions", "list", "--status", "terminated")
	if !strings.Contains(list, id) {
		t.Fatalf("list: %s", list)
	}
}

func TestConfigCheckAndProfile(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("profiles:\n  a:\n    modle: openai/x\n    limits:\n      max_iterations: -1\n"), 0o644)
	out, _, code := c.run("", "config", "check", bad)
	if code != exitFailed || !strings.Contains(out, bad+":3:5") || !strings.Contains(out, "model") || !strings.Contains(out, ":5:") {
		t.Fatalf("%d %s", code, out)
	}
	if _, errOut, code := c.run("", "config", "check", "../../config/example.yaml"); code != 0 {
		t.Fatalf("example: %d %s", code, errOut)
	}
	good := filepath.Join(dir, "good.yaml")
	script := writeScript(t, `{"steps":[{"tool_calls":[{"name":"list_dir","arguments":{}}]},{"tool_calls":[{"name":"list_dir","arguments":{"path":"."}}]},{"text":"partial"}]}`)
	os.WriteFile(good, []byte("default_profile: tiny\nprofiles:\n  tiny:\n    model: script:"+script+"\n    limits:\n      max_iterations: 2\n"), 0o644)
	_, errOut, code := c.run("", "run", "--config", good, "--dir", t.TempDir(), "task")
	if code != exitLimit || !strings.Contains(errOut, "after 2 steps") {
		t.Fatalf("profile limits: %d %s", code, errOut)
	}
	// A flag on the command line wins over the profile.
	_, errOut, code = c.run("", "run", "--config", good, "--max-iterations", "1", "--dir", t.TempDir(), "task")
	if code != exitLimit || !strings.Contains(errOut, "after 1 steps") {
		t.Fatalf("flag over profile: %d %s", code, errOut)
	}
}

// hermeticEnv keeps the user's own config, database and model choice out of
// the tests.
func hermeticEnv(t *testing.T) []string {
	return append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "AGENTLOOP_CONFIG=", "AGENTLOOP_DB=", "AGENTLOOP_MODEL=", "AGENTLOOP_PRICES=")
}

// syncBuffer is a bytes.Buffer safe to read while a command writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestRecoverNothingLeft(t *testing.T) {
	c := newCLI(t)
	if _, errOut, code := c.run("", "sessions", "recover"); code != 0 || !strings.Contains(errOut, "no session was left running") {
		t.Fatalf("%d %s", code, errOut)
	}
}

// kill -9 during a run leaves the session "running"; recover finishes it.
func TestRecoverAfterKill(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[
		{"tool_calls":[{"name":"list_dir","arguments":{}}]},
		{"text":"slow","delay":"2s","tool_calls":[{"name":"list_dir","arguments":{"path":"."}}]},
		{"text":"recovered and done"}]}`)
	cmd := exec.Command(binary, c.withDB([]string{"run", "--model", "script:" + script, "--dir", t.TempDir(), "task"})...)
	cmd.Env = hermeticEnv(t)
	var errb syncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(errb.String(), "list_dir") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no progress: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	list, _, _ := c.run("", "sessions", "list", "--status", "running")
	id := sessionID(t, c)
	if !strings.Contains(list, id) {
		t.Fatalf("not left running: %s", list)
	}
	out, errOut, code := c.run("", "sessions", "recover")
	if code != exitCompleted || !strings.Contains(out, "recovered and done") || !strings.Contains(errOut, "recovering session "+id) {
		t.Fatalf("%d %s %s", code, out, errOut)
	}
}

func TestBadPriceTableIsAnError(t *testing.T) {
	c := newCLI(t)
	bad := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(bad, []byte(`{"gpt-x": {"input_per_mtok": "cheap"}}`), 0o644)
	c.env = []string{"AGENTLOOP_PRICES=" + bad}
	_, errOut, code := c.run("", "run", "--model", "script:"+writeScript(t, `{"steps":[{"text":"hi"}]}`), "task")
	if code != exitFailed || !strings.Contains(errOut, bad) || !strings.Contains(errOut, "AGENTLOOP_PRICES") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
