// Package git provides read-only git tools for a workspace: git_status,
// git_log and git_diff. They run the real git binary in the workspace root
// with a reduced environment and with the repository settings that could
// make a read run other programs (fsmonitor, external diff, textconv,
// pager) switched off.
package git

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Limits of the git tools.
const (
	MaxOutputBytes = 100 << 10
	DefaultLog     = 10
	MaxLog         = 100
	Timeout        = 30 * time.Second
)

// ErrNotRepository is matched (errors.Is) when the workspace is not inside a
// git repository.
var ErrNotRepository = errors.New("not a git repository")

// ErrNoGit is matched (errors.Is) when no git binary is found on PATH.
var ErrNoGit = errors.New("git is not installed")

// Tools returns git_status, git_log and git_diff for ws.
func Tools(ws *workspace.Workspace) []tool.Tool {
	return []tool.Tool{Status(ws), Log(ws), Diff(ws)}
}

// Sandboxed returns the git tools for ws, running git under policy (nil:
// unconfined): a repository's config can still name programs git would
// run, and the sandbox is the wall behind the settings switched off here.
func Sandboxed(ws *workspace.Workspace, policy *sandbox.Policy) []tool.Tool {
	r := repo{ws: ws, policy: policy}
	return []tool.Tool{status(r), logTool(r), diff(r)}
}

// repo is a workspace and the sandbox its git runs in.
type repo struct {
	ws     *workspace.Workspace
	policy *sandbox.Policy
}

// gitTool is a read-only, idempotent tool.
type gitTool struct {
	spec model.ToolSpec
	run  func(ctx context.Context, args json.RawMessage) (tool.Result, error)
}

func (t *gitTool) Spec() model.ToolSpec { return t.spec }
func (t *gitTool) Effect() tool.Effect  { return tool.EffectRead }
func (t *gitTool) Idempotent() bool     { return true }
func (t *gitTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return t.run(ctx, args)
}

// Status returns the git_status tool.
func Status(ws *workspace.Workspace) tool.Tool { return status(repo{ws: ws}) }

func status(r repo) tool.Tool {
	return &gitTool{
		spec: model.ToolSpec{
			Name: "git_status",
			Description: "Show the git branch and which files are modified, staged or untracked (git status --short --branch: " +
				"first column staged, second unstaged; ?? untracked). Paths are relative to the workspace.",
			Parameters: json.RawMessage(`{"type": "object", "properties": {}, "additionalProperties": false}`),
		},
		run: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			out, err := run(ctx, r, "status", "--short", "--branch", "--untracked-files=normal")
			if err != nil {
				return tool.Result{}, err
			}
			if strings.Count(strings.TrimSpace(out), "\n") == 0 {
				out = strings.TrimRight(out, "\n") + "\nnothing to commit, working tree clean\n"
			}
			return tool.Result{Output: out}, nil
		},
	}
}

type logArgs struct {
	Limit int `json:"limit"`
}

// Log returns the git_log tool.
func Log(ws *workspace.Workspace) tool.Tool { return logTool(repo{ws: ws}) }

func logTool(r repo) tool.Tool {
	return &gitTool{
		spec: model.ToolSpec{
			Name:        "git_log",
			Description: "Show recent commits of the current branch, newest first: short hash, date, author and subject.",
			Parameters: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "description": "How many commits to show (default %d)"}
  },
  "additionalProperties": false
}`, MaxLog, DefaultLog)),
		},
		run: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			var a logArgs
			if err := unmarshal("git_log", raw, &a); err != nil {
				return tool.Result{}, err
			}
			limit := a.Limit
			if limit <= 0 {
				limit = DefaultLog
			}
			limit = min(limit, MaxLog)
			out, err := run(ctx, r, "log", fmt.Sprintf("--max-count=%d", limit), "--date=short", "--format=%h %ad %an: %s")
			if err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Output: out}, nil
		},
	}
}

type diffArgs struct {
	Path   string `json:"path"`
	Staged bool   `json:"staged"`
}

// Diff returns the git_diff tool.
func Diff(ws *workspace.Workspace) tool.Tool { return diff(repo{ws: ws}) }

func diff(r repo) tool.Tool {
	return &gitTool{
		spec: model.ToolSpec{
			Name: "git_diff",
			Description: fmt.Sprintf("Show uncommitted changes as a unified diff: by default changes not yet staged, with staged=true "+
				"the changes staged for the next commit. New untracked files are not included (see git_status). "+
				"Output is capped at %d KiB; pass path to see one file or directory.", MaxOutputBytes>>10),
			Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Only show changes to this file or directory, relative to the workspace root"},
    "staged": {"type": "boolean", "description": "Show staged changes (git diff --cached) instead of unstaged ones (default false)"}
  },
  "additionalProperties": false
}`),
		},
		run: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			var a diffArgs
			if err := unmarshal("git_diff", raw, &a); err != nil {
				return tool.Result{}, err
			}
			args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--relative"}
			if a.Staged {
				args = append(args, "--cached")
			}
			where := ""
			if a.Path != "" {
				abs, err := r.ws.Resolve(a.Path)
				if err != nil {
					return tool.Result{}, err
				}
				rel := r.ws.Rel(abs)
				args = append(args, "--", rel)
				where = " in " + rel
			}
			out, err := run(ctx, r, args...)
			if err != nil {
				return tool.Result{}, err
			}
			if out == "" {
				if a.Staged {
					return tool.Result{Output: "no staged changes" + where + "\n"}, nil
				}
				return tool.Result{Output: "no unstaged changes" + where + " (new untracked files are not shown; see git_status, and staged=true for staged changes)\n"}, nil
			}
			return tool.Result{Output: out}, nil
		},
	}
}

func unmarshal(name string, raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: arguments do not match the schema: %v", name, err)
	}
	return nil
}

// safety are settings given on every command line so that a repository's
// own config cannot make a read-only command run programs or page output.
var safety = []string{
	"-c", "core.fsmonitor=false",
	"-c", "core.pager=cat",
	"-c", "color.ui=false",
	"-c", "log.showSignature=false", // gpg would run
	"--no-pager",
	"--no-optional-locks", // do not take index.lock or refresh the index on disk
}

// noFilters switches off the repository's filter drivers (clean, smudge
// and process commands a repository's config can name, which git status
// and git diff would run on the workspace's files): it reads their names
// from the config — reading config runs nothing — and empties each.
func noFilters(ctx context.Context, r repo, bin string, env []string) []string {
	cmd, err := command(ctx, r, env, bin, "--no-pager", "config", "--get-regexp", `^filter\.`)
	if err != nil {
		return nil // run's own command fails the same way, and says so
	}
	out, _ := cmd.Output() // exit 1: no filter configured
	var opts []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		key, _, _ := strings.Cut(line, " ")
		name, ok := strings.CutPrefix(key, "filter.")
		if i := strings.LastIndexByte(name, '.'); ok && i > 0 {
			name = name[:i]
		} else {
			continue
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		for _, v := range []string{"clean", "smudge", "process"} {
			opts = append(opts, "-c", "filter."+name+"."+v+"=")
		}
		opts = append(opts, "-c", "filter."+name+".required=false")
	}
	return opts
}

// envAllow is passed through to git; GIT_DIR and friends, and secrets, are
// not. The locale is fixed to C so that git's messages can be recognised.
var envAllow = []string{"PATH", "HOME", "USER", "TMPDIR", "XDG_CONFIG_HOME"}

// run runs git in the workspace root and returns its stdout, capped.
func run(ctx context.Context, r repo, args ...string) (string, error) {
	ws := r.ws
	bin, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("%w (not found on PATH), so %s cannot run; use execute_command or the file tools instead", ErrNoGit, toolName(args[0]))
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	env := []string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}
	for _, name := range envAllow {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	opts := append(append([]string(nil), safety...), noFilters(ctx, r, bin, env)...)
	cmd, err := command(ctx, r, env, bin, append(opts, args...)...)
	if err != nil {
		return "", err
	}
	stdout := &capped{max: MaxOutputBytes}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", fmt.Errorf("git %s did not finish: %w", args[0], ctxErr)
		}
		msg := strings.TrimSpace(stderr.String())
		switch {
		case strings.Contains(strings.ToLower(msg), "not a git repository"):
			return "", fmt.Errorf("the workspace %s is %w (nor inside one), so %s has nothing to show; use the file tools, or execute_command to run git init if a repository is wanted",
				ws.Root(), ErrNotRepository, toolName(args[0]))
		case strings.Contains(msg, "does not have any commits yet"):
			return "", fmt.Errorf("the repository has no commits yet, so there is no history to show; see git_status")
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("git %s failed with exit code %d: %s", args[0], exit.ExitCode(), msg)
		}
		return "", fmt.Errorf("git %s could not run: %v", args[0], err)
	}
	out := stdout.buf.String()
	if stdout.total > len(stdout.buf.Bytes()) {
		out = strings.ToValidUTF8(out, "")
		out += fmt.Sprintf("\n[truncated: the output is %d bytes, showing the first %d KiB; narrow it down, e.g. with path]\n", stdout.total, MaxOutputBytes>>10)
	}
	return out, nil
}

// command is git with args in the workspace root, under the repo's
// sandbox (through the command supervisor) when it has one; ctx ends it.
func command(ctx context.Context, r repo, env []string, bin string, args ...string) (*exec.Cmd, error) {
	if r.policy == nil || !r.policy.Confined() {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env, cmd.WaitDelay = r.ws.Root(), env, time.Second
		return cmd, nil
	}
	cmd, err := shell.CommandContext(ctx, r.policy, env, append([]string{bin}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("git cannot run sandboxed: %w", err)
	}
	cmd.Dir, cmd.WaitDelay = r.ws.Root(), time.Second
	return cmd, nil
}

func toolName(sub string) string { return "git_" + sub }

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	buf   bytes.Buffer
	max   int
	total int
}

func (c *capped) Write(p []byte) (int, error) {
	c.total += len(p)
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
