package git_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/git"
	"github.com/agentloop/agentloop/tool/workspace"
)

// repo is a real git repository in a temporary directory.
type repo struct {
	t   *testing.T
	dir string
	reg *tool.Registry
}

func newRepo(t *testing.T, initGit bool) *repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &repo{t: t, dir: ws.Root(), reg: tool.MustRegistry(git.Tools(ws)...)}
	if initGit {
		r.git("init", "-q", "-b", "main")
	}
	return r
}

func (r *repo) git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2024-05-01T12:00:00Z", "GIT_COMMITTER_DATE=2024-05-01T12:00:00Z")
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func (r *repo) write(rel, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) commit(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
}

func (r *repo) call(name string, args map[string]any) tool.Result {
	r.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	raw, _ := json.Marshal(args)
	return r.reg.Call(r.t.Context(), name, raw)
}

func TestDeclarations(t *testing.T) {
	r := newRepo(t, false)
	for _, name := range []string{"git_status", "git_log", "git_diff"} {
		tl, ok := r.reg.Lookup(name)
		if !ok {
			t.Fatalf("%s missing", name)
		}
		if tool.EffectOf(tl) != tool.EffectRead || !tool.IsIdempotent(tl) {
			t.Errorf("%s: effect %s idempotent %v", name, tool.EffectOf(tl), tool.IsIdempotent(tl))
		}
		if !strings.Contains(string(tl.Spec().Parameters), `"additionalProperties": false`) {
			t.Errorf("%s: schema allows unknown properties", name)
		}
	}
}

func TestStatus(t *testing.T) {
	r := newRepo(t, true)
	if res := r.call("git_status", nil); res.IsError || res.Output != "## No commits yet on main\nnothing to commit, working tree clean\n" {
		t.Errorf("empty repository: %+v", res)
	}
	r.write("a.txt", "one\n")
	r.write("b.txt", "b\n")
	r.commit("first")
	if res := r.call("git_status", nil); res.IsError || res.Output != "## main\nnothing to commit, working tree clean\n" {
		t.Errorf("clean: %+v", res)
	}
	r.write("a.txt", "two\n")
	r.write("new.txt", "new\n")
	r.write("b.txt", "staged\n")
	r.git("add", "b.txt")
	want := "## main\n M a.txt\nM  b.txt\n?? new.txt\n"
	if res := r.call("git_status", nil); res.IsError || res.Output != want {
		t.Errorf("got %+v, want %q", res, want)
	}
}

func TestLog(t *testing.T) {
	r := newRepo(t, true)
	res := r.call("git_log", nil)
	if !res.IsError || !strings.Contains(res.Output, "the repository has no commits yet") {
		t.Errorf("empty repository: %+v", res)
	}
	for _, msg := range []string{"first", "second", "third"} {
		r.write(msg+".txt", msg)
		r.commit(msg)
	}
	line := regexp.MustCompile(`^[0-9a-f]{7,} 2024-05-01 Ada: (\w+)$`)
	for _, tt := range []struct {
		args map[string]any
		want []string
	}{
		{nil, []string{"third", "second", "first"}},
		{map[string]any{"limit": 2}, []string{"third", "second"}},
	} {
		res := r.call("git_log", tt.args)
		lines := strings.Split(strings.TrimSuffix(res.Output, "\n"), "\n")
		if res.IsError || len(lines) != len(tt.want) {
			t.Fatalf("git_log %v: %+v", tt.args, res)
		}
		for i, l := range lines {
			m := line.FindStringSubmatch(l)
			if m == nil || m[1] != tt.want[i] {
				t.Errorf("line %d = %q, want subject %s", i, l, tt.want[i])
			}
		}
	}
	if res := r.call("git_log", map[string]any{"limit": 101}); !res.IsError || !strings.Contains(res.Output, "limit") {
		t.Errorf("limit above the maximum accepted: %+v", res)
	}
}

func TestDiff(t *testing.T) {
	r := newRepo(t, true)
	r.write("a.txt", "one\n")
	r.write("sub/b.txt", "b\n")
	r.commit("first")

	if res := r.call("git_diff", nil); res.IsError || !strings.HasPrefix(res.Output, "no unstaged changes (new untracked files are not shown") {
		t.Errorf("clean: %+v", res)
	}
	r.write("a.txt", "two\n")
	r.write("sub/b.txt", "B\n")
	r.git("add", "sub/b.txt")
	tests := []struct {
		args    map[string]any
		has     []string
		hasNot  []string
		isError bool
	}{
		{args: nil, has: []string{"--- a/a.txt\n+++ b/a.txt\n", "-one\n+two\n"}, hasNot: []string{"sub/b.txt"}},
		{args: map[string]any{"staged": true}, has: []string{"+++ b/sub/b.txt\n", "-b\n+B\n"}, hasNot: []string{"a.txt"}},
		{args: map[string]any{"staged": true, "path": "sub"}, has: []string{"-b\n+B\n"}},
		{args: map[string]any{"path": "sub"}, has: []string{"no unstaged changes in sub"}},
		{args: map[string]any{"path": "../elsewhere"}, has: []string{"outside the workspace"}, isError: true},
		{args: map[string]any{"path": "/etc"}, has: []string{"outside the workspace"}, isError: true},
		{args: map[string]any{"path": "out/x"}, has: []string{"outside the workspace"}, isError: true}, // a symlink out
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(r.dir, "out")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		res := r.call("git_diff", tt.args)
		if res.IsError != tt.isError {
			t.Errorf("git_diff %v: %+v", tt.args, res)
		}
		for _, h := range tt.has {
			if !strings.Contains(res.Output, h) {
				t.Errorf("git_diff %v lacks %q:\n%s", tt.args, h, res.Output)
			}
		}
		for _, h := range tt.hasNot {
			if strings.Contains(res.Output, h) {
				t.Errorf("git_diff %v has %q:\n%s", tt.args, h, res.Output)
			}
		}
	}
}

// A repository's config must not make the read-only tools run programs.
func TestRepositoryConfigCannotRunPrograms(t *testing.T) {
	r := newRepo(t, true)
	r.write("a.txt", "one\n")
	r.write(".gitattributes", "*.txt diff=evil filter=evil filter=sneaky.one\n")
	r.commit("first")
	r.write("a.txt", "two\n")
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(t.TempDir(), "evil.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{
		{"core.fsmonitor", script},
		{"core.pager", script},
		{"diff.external", script},
		{"diff.evil.textconv", script},
		{"diff.evil.command", script},
		{"filter.evil.clean", script},
		{"filter.evil.smudge", script},
		{"filter.sneaky.one.process", script},
		{"log.showSignature", "true"},
		{"gpg.program", script},
	} {
		r.git("config", kv[0], kv[1])
	}
	for _, name := range []string{"git_status", "git_diff", "git_log"} {
		if res := r.call(name, nil); res.IsError {
			t.Errorf("%s: %s", name, res.Output)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a read-only git tool ran a program named in the repository's config")
	}
}

func TestNotARepository(t *testing.T) {
	r := newRepo(t, false)
	for _, name := range []string{"git_status", "git_log", "git_diff"} {
		res := r.call(name, nil)
		want := "the workspace " + r.dir + " is not a git repository (nor inside one), so " + name + " has nothing to show"
		if !res.IsError || !strings.Contains(res.Output, want) {
			t.Errorf("%s: %+v\nwant %q", name, res, want)
		}
	}
}

func TestGitMissing(t *testing.T) {
	r := newRepo(t, true)
	t.Setenv("PATH", t.TempDir())
	res := r.call("git_status", nil)
	if !res.IsError || !strings.Contains(res.Output, "git is not installed (not found on PATH), so git_status cannot run") {
		t.Errorf("%+v", res)
	}
}
