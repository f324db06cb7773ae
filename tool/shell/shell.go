// Package shell provides execute_command, the tool that runs a shell command
// in the workspace.
//
// A command runs under /bin/sh -c in its own process group, with a time
// limit, an environment reduced to an allowlist, stdin empty and each output
// stream capped (keeping its head and tail). On timeout, cancellation, or
// when the shell exits leaving processes behind, the whole group gets
// SIGTERM and, after a grace period, SIGKILL. The files of the workspace are
// compared before and after (size, mtime, mode) so the changes a command
// made are reported like those of the file tools.
//
// The package is for Unix systems.
package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// DefaultEnv is the environment passed through to commands when
// Config.Env is nil. Secrets such as API keys are deliberately absent.
var DefaultEnv = []string{
	"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER",
	"GOPATH", "GOCACHE", "GOROOT", "GOFLAGS",
}

// Config configures execute_command. The zero value gives the defaults.
type Config struct {
	// Timeout is the time limit of a command that does not ask for one
	// (default 2 minutes).
	Timeout time.Duration
	// MaxTimeout is the longest limit a call may ask for with
	// timeout_seconds (default 10 minutes, and at least Timeout).
	MaxTimeout time.Duration
	// MaxOutputBytes caps each of stdout and stderr (default 32 KiB); the
	// first and last halves are kept.
	MaxOutputBytes int
	// Env names the variables of this process passed to commands
	// (default DefaultEnv; an empty non-nil slice passes none).
	Env []string
	// SetEnv adds "NAME=value" entries to every command's environment.
	SetEnv []string
	// KillGrace is how long a process group has to exit after SIGTERM
	// before it gets SIGKILL (default 2 seconds).
	KillGrace time.Duration
	// Shell is the shell that runs the command with -c (default /bin/sh).
	Shell string
	// MaxTrackedFiles bounds how many files are compared to detect what a
	// command changed (default 20000).
	MaxTrackedFiles int
	// Sandbox confines every command (nil: unconfined). It needs the
	// supervisor (Supervise in main); without one a command refuses to
	// start rather than run unconfined.
	Sandbox *sandbox.Policy
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 10 * time.Minute
	}
	c.MaxTimeout = max(c.MaxTimeout, c.Timeout)
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = 32 << 10
	}
	if c.Env == nil {
		c.Env = DefaultEnv
	}
	if c.KillGrace <= 0 {
		c.KillGrace = 2 * time.Second
	}
	if c.Shell == "" {
		c.Shell = "/bin/sh"
	}
	if c.MaxTrackedFiles <= 0 {
		c.MaxTrackedFiles = 20000
	}
	return c
}

type execArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
	Cwd            string `json:"cwd"`
}

// Tool is the execute_command tool.
type Tool struct {
	ws  *workspace.Workspace
	cfg Config
}

// New returns the execute_command tool for ws.
func New(ws *workspace.Workspace, cfg Config) *Tool {
	return &Tool{ws: ws, cfg: cfg.withDefaults()}
}

// Effect is execute: a command can do anything the user can.
func (t *Tool) Effect() tool.Effect { return tool.EffectExecute }

// Idempotent is false: running a command twice may not be safe.
func (t *Tool) Idempotent() bool { return false }

// Spec describes execute_command.
func (t *Tool) Spec() model.ToolSpec {
	maxSecs := max(1, int(t.cfg.MaxTimeout/time.Second))
	return model.ToolSpec{
		Name: "execute_command",
		Description: fmt.Sprintf("Run a shell command with %s -c in the workspace directory (or cwd inside it) and return its exit code, stdout and stderr. "+
			"Use it to build, run tests, and use tools such as git, go or npm. Each output stream is capped at %s, keeping its start and end. "+
			"The command gets no input (stdin is empty), so use non-interactive flags. The default time limit is %s (at most %d seconds with timeout_seconds); "+
			"on timeout the command and every process it started are stopped, and so are processes it leaves running in the background when it finishes. "+
			"Only these environment variables are passed: %s.%s",
			t.cfg.Shell, byteSize(t.cfg.MaxOutputBytes), seconds(t.cfg.Timeout), maxSecs, strings.Join(t.cfg.Env, ", "), t.sandboxNote()),
		Parameters: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The shell command, e.g. go test ./... or ls -la src"},
    "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Time limit in seconds (default %s)"},
    "cwd": {"type": "string", "description": "Directory to run in, relative to the workspace root (default: the root)"}
  },
  "required": ["command"],
  "additionalProperties": false
}`, maxSecs, seconds(t.cfg.Timeout))),
	}
}

// sandboxNote tells the model the sandbox's rules up front.
func (t *Tool) sandboxNote() string {
	if t.cfg.Sandbox == nil || !t.cfg.Sandbox.Confined() {
		return ""
	}
	return " " + strings.TrimPrefix(t.cfg.Sandbox.Rules(), "[sandbox] ")
}

func byteSize(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return d.String()
}

// Call runs the command. A non-zero exit or a timeout is an error Result;
// a returned error means the command could not start or ctx was cancelled
// (then the Result holds what the command printed before it was stopped).
func (t *Tool) Call(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a execArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Result{}, fmt.Errorf("execute_command: arguments do not match the schema: %v; send {\"command\": \"...\"}", err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return tool.Result{}, fmt.Errorf("command is empty; pass the shell command to run")
	}
	timeout := t.cfg.Timeout
	if a.TimeoutSeconds > 0 {
		timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, t.cfg.MaxTimeout)
	}
	dir := t.ws.Root()
	if a.Cwd != "" {
		abs, err := t.ws.Resolve(a.Cwd)
		if err != nil {
			return tool.Result{}, err
		}
		fi, err := os.Stat(abs)
		if err != nil || !fi.IsDir() {
			return tool.Result{}, fmt.Errorf("cwd %s is not a directory in the workspace; use list_dir to find one, or leave cwd out to run in the workspace root", a.Cwd)
		}
		dir = abs
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}

	before := scan(t.ws.Root(), t.cfg.MaxTrackedFiles)
	r, err := t.run(ctx, a.Command, dir, timeout)
	if err != nil {
		return tool.Result{}, err
	}
	after := scan(t.ws.Root(), t.cfg.MaxTrackedFiles)
	changes := compare(before, after)
	for _, c := range changes {
		t.ws.Report(ctx, c.Path, c.Kind)
	}
	r.changes, r.untracked = changes, !before.complete || !after.complete
	r.maxTracked = t.cfg.MaxTrackedFiles

	res := tool.Result{Output: r.format(), IsError: r.timedOut || r.exitCode != 0}
	if res.IsError && t.cfg.Sandbox != nil {
		// A refusal is an ordinary result that states the rule.
		if line := t.cfg.Sandbox.Explain(r.stdout + "\n" + r.stderr); line != "" {
			res.Output = strings.TrimRight(res.Output, "\n") + "\n" + line + "\n"
		}
	}
	if r.cancelled {
		return res, fmt.Errorf("execute_command was stopped before the command finished: %w", context.Cause(ctx))
	}
	return res, nil
}

// run runs the command and waits for it, its process group and its output.
func (t *Tool) run(ctx context.Context, command, dir string, timeout time.Duration) (*result, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd, err := Command(t.cfg.Sandbox, t.environ(), t.cfg.Shell, "-c", command)
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, err
	}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = outW, errW // files, so Wait returns when the shell exits
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("cannot start %s in %s: %v", t.cfg.Shell, dir, err)
	}
	pgid := cmd.Process.Pid // Setpgid: the shell leads a new group

	stdout := newCapture(t.cfg.MaxOutputBytes)
	stderr := newCapture(t.cfg.MaxOutputBytes)
	copied := make(chan struct{}, 2)
	go func() { io.Copy(stdout, outR); copied <- struct{}{} }()
	go func() { io.Copy(stderr, errR); copied <- struct{}{} }()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()

	r := &result{timeout: timeout}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-exited:
		if groupAlive(pgid) {
			r.leftovers = true
			t.terminate(pgid)
		}
	case <-timer.C:
		r.timedOut = true
		t.terminate(pgid)
	case <-ctx.Done():
		r.cancelled = true
		t.terminate(pgid)
	}
	<-exited

	// Every process of the group is gone, so the pipes reach EOF, unless a
	// process left the group (setsid) holding them: stop reading then.
	drain := time.NewTimer(t.cfg.KillGrace)
	defer drain.Stop()
	for n := 0; n < 2; {
		select {
		case <-copied:
			n++
		case <-drain.C:
			r.detached = true
			outR.Close()
			errR.Close()
		}
	}
	outR.Close()
	errR.Close()

	r.stdout, r.stderr = stdout.String(), stderr.String()
	st := cmd.ProcessState
	r.exitCode = st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.signal = ws.Signal()
	}
	return r, nil
}

// environ builds the command's environment from the allowlist.
func (t *Tool) environ() []string {
	env := make([]string, 0, len(t.cfg.Env)+len(t.cfg.SetEnv)+1)
	hasPath := false
	for _, name := range t.cfg.Env {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
			hasPath = hasPath || name == "PATH"
		}
	}
	for _, kv := range t.cfg.SetEnv {
		hasPath = hasPath || strings.HasPrefix(kv, "PATH=")
	}
	if !hasPath {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	return append(env, t.cfg.SetEnv...)
}

// terminate sends SIGTERM to the process group, waits up to KillGrace for
// it to exit, then sends SIGKILL.
func (t *Tool) terminate(pgid int) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // the group is already gone
	}
	deadline := time.Now().Add(t.cfg.KillGrace)
	for time.Now().Before(deadline) {
		if !groupAlive(pgid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	// SIGKILL is delivered asynchronously: return once the group is gone
	// (bounded, since a zombie nobody reaps still counts as a member).
	for end := time.Now().Add(time.Second); groupAlive(pgid) && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
}
