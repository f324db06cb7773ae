package shell_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
)

func newWS(t *testing.T) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// run calls the tool through a registry, so the arguments are validated.
func run(t *testing.T, ws *workspace.Workspace, cfg shell.Config, args map[string]any) tool.Result {
	t.Helper()
	reg, err := tool.NewRegistry(shell.New(ws, cfg))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	return reg.Call(t.Context(), "execute_command", raw)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dead reports whether pid no longer runs. A zombie is dead: where PID 1
// does not reap orphans (this container), killed children stay zombies.
func dead(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	}
	f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
	return string(f[0]) == "Z" || string(f[0]) == "X"
}

// pids returns the process ids printed as pid=N in s.
func pids(t *testing.T, s string) []int {
	t.Helper()
	var out []int
	for _, m := range regexp.MustCompile(`pid=(\d+)`).FindAllStringSubmatch(s, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil || n <= 1 {
			t.Fatalf("bad pid %q", m[0])
		}
		out = append(out, n)
	}
	return out
}

// kill stops a process a test failed to stop; pid is always a real child id.
func kill(pid int) {
	if pid > 1 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestDeclaration(t *testing.T) {
	tl := shell.New(newWS(t), shell.Config{})
	if tool.EffectOf(tl) != tool.EffectExecute || tool.IsIdempotent(tl) {
		t.Errorf("effect %s idempotent %v", tool.EffectOf(tl), tool.IsIdempotent(tl))
	}
	spec := tl.Spec()
	var schema struct {
		Required             []string `json:"required"`
		AdditionalProperties bool     `json:"additionalProperties"`
		Properties           map[string]struct {
			Maximum int `json:"maximum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if spec.Name != "execute_command" || !reflect.DeepEqual(schema.Required, []string{"command"}) || schema.AdditionalProperties {
		t.Errorf("spec %s %+v", spec.Name, schema)
	}
	if got := schema.Properties["timeout_seconds"].Maximum; got != 600 {
		t.Errorf("timeout_seconds maximum %d, want 600", got)
	}
	for _, want := range []string{"/bin/sh -c", "120s", "PATH, HOME"} {
		if !strings.Contains(spec.Description, want) {
			t.Errorf("description lacks %q: %s", want, spec.Description)
		}
	}
}

func TestExitCodesAndStreams(t *testing.T) {
	ws := newWS(t)
	tests := []struct {
		command string
		want    string
		isError bool
	}{
		{"echo hello", "exit code: 0\nstdout:\nhello\nstderr: (empty)\n", false},
		{"echo out; echo err >&2; exit 3", "exit code: 3\nstdout:\nout\nstderr:\nerr\n", true},
		{"printf abc", "exit code: 0\nstdout:\nabc\nstderr: (empty)\n", false},
		{"cat", "exit code: 0\nstdout: (empty)\nstderr: (empty)\n", false}, // stdin is empty, not the terminal
		{"kill -KILL $$", "killed by signal 9 (killed)\nstdout: (empty)\nstderr: (empty)\n", true},
		{"no-such-command-xyz", "exit code: 127\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			res := run(t, ws, shell.Config{}, map[string]any{"command": tt.command})
			if res.IsError != tt.isError || !strings.HasPrefix(res.Output, tt.want) {
				t.Errorf("got IsError=%v\n%s\nwant IsError=%v and\n%s", res.IsError, res.Output, tt.isError, tt.want)
			}
		})
	}
}

func TestCwd(t *testing.T) {
	ws := newWS(t)
	writeFile(t, filepath.Join(ws.Root(), "sub", "file.txt"), "x")
	tests := []struct {
		cwd, want string
		isError   bool
	}{
		{"sub", "stdout:\n" + filepath.Join(ws.Root(), "sub") + "\n", false},
		{"", "stdout:\n" + ws.Root() + "\n", false},
		{"../", "path ../ is outside the workspace", true},
		{"/tmp", "path /tmp is outside the workspace", true},
		{"sub/file.txt", "cwd sub/file.txt is not a directory in the workspace", true},
		{"missing", "cwd missing is not a directory in the workspace", true},
	}
	for _, tt := range tests {
		res := run(t, ws, shell.Config{}, map[string]any{"command": "pwd -P", "cwd": tt.cwd})
		if res.IsError != tt.isError || !strings.Contains(res.Output, tt.want) {
			t.Errorf("cwd %q: got %+v, want IsError=%v containing %q", tt.cwd, res, tt.isError, tt.want)
		}
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	tests := []struct {
		name, command string
	}{
		// sleep 100 & sleep 100, with both pids printed: the foreground
		// sleep is exec'd by a child shell that prints its own pid first.
		{"background and foreground", "sleep 100 & echo pid=$!; sh -c 'echo pid=$$; exec sleep 100'"},
		// SIGTERM is ignored by the shell and inherited by its children,
		// so only SIGKILL after the grace period stops them.
		{"ignoring SIGTERM", "trap '' TERM; sleep 100 & echo pid=$!; sleep 100 & echo pid=$!; wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := shell.Config{Timeout: 500 * time.Millisecond, KillGrace: 300 * time.Millisecond}
			res := run(t, newWS(t), cfg, map[string]any{"command": tt.command})
			if !res.IsError || !strings.HasPrefix(res.Output, "timed out after 500ms: the command and its child processes were stopped") {
				t.Fatalf("got %+v", res)
			}
			ps := pids(t, res.Output)
			if len(ps) != 2 {
				t.Fatalf("expected two pids in output: %s", res.Output)
			}
			for _, pid := range ps {
				if !dead(pid) {
					t.Errorf("child %d still runs after the timeout", pid)
					kill(pid)
				}
			}
		})
	}
}

func TestTimeoutSecondsArgument(t *testing.T) {
	ws := newWS(t)
	res := run(t, ws, shell.Config{KillGrace: 100 * time.Millisecond}, map[string]any{"command": "sleep 100", "timeout_seconds": 1})
	if !res.IsError || !strings.HasPrefix(res.Output, "timed out after 1s") {
		t.Errorf("got %+v", res)
	}
	res = run(t, ws, shell.Config{Timeout: 2 * time.Second, MaxTimeout: 5 * time.Second}, map[string]any{"command": "true", "timeout_seconds": 6})
	if !res.IsError || !strings.Contains(res.Output, "timeout_seconds") {
		t.Errorf("a timeout above the maximum was accepted: %+v", res)
	}
}

func TestCancellationKills(t *testing.T) {
	ws := newWS(t)
	tl := shell.New(ws, shell.Config{KillGrace: 300 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	pidFile := filepath.Join(ws.Root(), "pids")
	go func() {
		// Cancel once both children have started.
		for ctx.Err() == nil {
			if b, err := os.ReadFile(pidFile); err == nil && len(pids(t, string(b))) == 2 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, err := tl.Call(ctx, json.RawMessage(`{"command": "sleep 100 & echo pid=$! > pids.tmp; sleep 100 & echo pid=$! >> pids.tmp; mv pids.tmp pids; wait"}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !strings.HasPrefix(res.Output, "stopped before it finished: the command and its child processes were killed.") {
		t.Errorf("output %q", res.Output)
	}
	b, _ := os.ReadFile(pidFile)
	for _, pid := range pids(t, string(b)) {
		if !dead(pid) {
			t.Errorf("child %d still runs after cancellation", pid)
			kill(pid)
		}
	}
}

func TestBackgroundProcessesStopped(t *testing.T) {
	for _, command := range []string{
		"sleep 100 >/dev/null 2>&1 & echo pid=$!",
		"sleep 100 & echo pid=$!", // holds stdout open
	} {
		res := run(t, newWS(t), shell.Config{KillGrace: 300 * time.Millisecond}, map[string]any{"command": command})
		if res.IsError || !strings.Contains(res.Output, "note: processes the command left running in the background were stopped.") {
			t.Errorf("%s: %+v", command, res)
		}
		for _, pid := range pids(t, res.Output) {
			if !dead(pid) {
				t.Errorf("%s: background process %d still runs", command, pid)
				kill(pid)
			}
		}
	}
}

func TestOutputTruncation(t *testing.T) {
	ws := newWS(t)
	res := run(t, ws, shell.Config{MaxOutputBytes: 1024}, map[string]any{"command": "seq 1 20000; echo small >&2"})
	total := 0
	for i := 1; i <= 20000; i++ {
		total += len(strconv.Itoa(i)) + 1
	}
	marker := fmt.Sprintf("\n[… %d bytes omitted …]\n", total-1024)
	if !strings.HasPrefix(res.Output, "exit code: 0\nstdout:\n1\n2\n3\n") ||
		!strings.Contains(res.Output, marker) ||
		!strings.Contains(res.Output, "\n19999\n20000\nstderr:\nsmall\n") {
		t.Errorf("output:\n%s", res.Output)
	}
	out := res.Output[strings.Index(res.Output, "stdout:\n")+len("stdout:\n") : strings.Index(res.Output, "stderr:")]
	if got := len(out) - len(marker); got != 1024 {
		t.Errorf("kept %d bytes of stdout, want 1024", got)
	}

	// Cuts never split a multi-byte character.
	res = run(t, ws, shell.Config{MaxOutputBytes: 1001}, map[string]any{"command": "i=0; while [ $i -lt 2000 ]; do printf 'é'; i=$((i+1)); done"})
	if !utf8.ValidString(res.Output) || strings.Contains(res.Output, "\uFFFD") {
		t.Errorf("output is not clean UTF-8: %q", res.Output)
	}
	if !strings.Contains(res.Output, "bytes omitted") {
		t.Errorf("no marker: %q", res.Output)
	}
}

func TestEnvironmentAllowlist(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	t.Setenv("ANTHROPIC_API_KEY", "must-not-leak")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("FOO", "foo-value")
	ws := newWS(t)

	res := run(t, ws, shell.Config{}, map[string]any{"command": "env"})
	if strings.Contains(res.Output, "leak") || strings.Contains(res.Output, "FOO") {
		t.Errorf("secrets reached the command:\n%s", res.Output)
	}
	for _, want := range []string{"\nLANG=C.UTF-8\n", "\nPATH=" + os.Getenv("PATH") + "\n"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("env lacks %q:\n%s", want, res.Output)
		}
	}

	res = run(t, ws, shell.Config{Env: []string{"FOO"}, SetEnv: []string{"BAR=set"}}, map[string]any{"command": "env | sort"})
	want := "stdout:\nBAR=set\nFOO=foo-value\nPATH=/usr/local/bin:/usr/bin:/bin\n"
	if !strings.Contains(res.Output, want) || strings.Contains(res.Output, "LANG") {
		t.Errorf("got\n%s\nwant\n%s", res.Output, want)
	}
}

func TestReportsModifications(t *testing.T) {
	ws := newWS(t)
	root := ws.Root()
	writeFile(t, filepath.Join(root, "a.txt"), "a\n")
	writeFile(t, filepath.Join(root, "gone.txt"), "x\n")
	writeFile(t, filepath.Join(root, "same.txt"), "x\n")
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	var reported []tool.Modification
	ctx := tool.WithReporter(t.Context(), func(m tool.Modification) { reported = append(reported, m) })
	res, err := shell.New(ws, shell.Config{}).Call(ctx, json.RawMessage(`{"command":
		"echo more >> a.txt; rm gone.txt; echo new > new.txt; mkdir -p d && echo f > d/f; echo x > .git/index; mkdir -p node_modules/m && echo x > node_modules/m/i.js"}`))
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	want := []tool.Modification{
		{Path: "a.txt", Kind: tool.Changed},
		{Path: "d/f", Kind: tool.Created},
		{Path: "gone.txt", Kind: tool.Deleted},
		{Path: "new.txt", Kind: tool.Created},
	}
	if !reflect.DeepEqual(reported, want) {
		t.Errorf("reported %v, want %v", reported, want)
	}
	if got := ws.Changes(); !reflect.DeepEqual(got, want) {
		t.Errorf("Changes() = %v, want %v", got, want)
	}
	if !strings.Contains(res.Output, "files: changed a.txt, created d/f, deleted gone.txt, created new.txt\n") {
		t.Errorf("output:\n%s", res.Output)
	}
	diff, err := ws.Diff()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "# a.txt: changed by a command; its earlier content was not recorded") ||
		!strings.Contains(diff, "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n") {
		t.Errorf("diff:\n%s", diff)
	}
}

func TestTrackingCap(t *testing.T) {
	ws := newWS(t)
	for i := range 10 {
		writeFile(t, filepath.Join(ws.Root(), fmt.Sprintf("f%d", i)), "x")
	}
	res := run(t, ws, shell.Config{MaxTrackedFiles: 5}, map[string]any{"command": "rm f9; echo y > f0"})
	if !strings.Contains(res.Output, "files: changed f0\nnote: the workspace has more than 5 files") {
		t.Errorf("output:\n%s", res.Output)
	}
}
