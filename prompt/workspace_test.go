package prompt

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// makeTree creates files (content irrelevant) and directories (ending "/").
func makeTree(t *testing.T, root string, paths map[string]string) {
	t.Helper()
	for p, content := range paths {
		full := filepath.Join(root, filepath.FromSlash(p))
		if p[len(p)-1] == '/' {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWorkspaceGit(t *testing.T) {
	tests := []struct {
		name           string
		tree           map[string]string
		dir            string // inside the temp root
		repo, branch   string
		commit         string
		repoIsBaseName bool
	}{
		{
			name: "branch and https origin",
			tree: map[string]string{
				".git/HEAD":   "ref: refs/heads/feature/x\n",
				".git/config": "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://github.com/acme/widgets.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
			},
			repo: "acme/widgets", branch: "feature/x",
		},
		{
			name: "scp-like origin, from a subdirectory",
			tree: map[string]string{
				".git/HEAD":   "ref: refs/heads/main",
				".git/config": "[remote \"upstream\"]\n url = git@github.com:other/thing.git\n[remote \"origin\"]\n url = git@github.com:acme/gadget.git\n",
				"sub/dir/":    "",
			},
			dir:  "sub/dir",
			repo: "acme/gadget", branch: "main",
		},
		{
			name: "detached head, no remote",
			tree: map[string]string{
				".git/HEAD":   "0123456789abcdef0123456789abcdef01234567\n",
				".git/config": "[core]\n",
			},
			commit: "0123456789ab", repoIsBaseName: true,
		},
		{
			name: "worktree .git file with commondir",
			tree: map[string]string{
				"main/.git/config":                 "[remote \"origin\"]\nurl = ssh://git@example.com:2222/team/proj.git\n",
				"main/.git/worktrees/wt/HEAD":      "ref: refs/heads/fix\n",
				"main/.git/worktrees/wt/commondir": "../..\n",
				"wt/.git":                          "gitdir: ../main/.git/worktrees/wt\n",
			},
			dir:  "wt",
			repo: "team/proj", branch: "fix",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "project")
			makeTree(t, root, tt.tree)
			w := Workspace(filepath.Join(root, filepath.FromSlash(tt.dir)), "")
			want := tt.repo
			if tt.repoIsBaseName {
				want = "project"
			}
			if w.Repository != want || w.Branch != tt.branch || w.Commit != tt.commit {
				t.Errorf("Workspace = repo %q branch %q commit %q, want %q %q %q", w.Repository, w.Branch, w.Commit, want, tt.branch, tt.commit)
			}
			if !filepath.IsAbs(w.Root) {
				t.Errorf("Root %q is not absolute", w.Root)
			}
		})
	}
}

func TestWorkspaceNoGit(t *testing.T) {
	dir := t.TempDir()
	w := Workspace(dir, "")
	// The temp dir may sit inside some repository on a developer machine;
	// only check when none was found above it.
	if _, _, found := findGitDir(dir); !found && (w.Repository != "" || w.Branch != "") {
		t.Errorf("Workspace outside git = %+v, want no repository", w)
	}
}

func TestMentionedFiles(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, map[string]string{
		"main.go": "", "Makefile": "", "README": "", "docs/": "", "internal/loop/runner.go": "",
		"cmd/agentloop/main.go": "", ".env": "", "a b.txt": "",
	})
	tests := []struct {
		task string
		want []string
	}{
		{"Fix the bug in main.go.", []string{"main.go"}},
		{"see `internal/loop/runner.go:42:7` and (cmd/agentloop/main.go)", []string{"internal/loop/runner.go", "cmd/agentloop/main.go"}},
		{"Update the Makefile and the docs/ folder", []string{"Makefile", "docs/"}},
		{"the docs are wrong", nil}, // a bare word that is a directory is not a mention
		{"read ./main.go, then main.go again", []string{"main.go"}},
		{"check " + filepath.Join(root, "main.go") + " now", []string{"main.go"}},
		{"not ../outside.go nor /etc/passwd nor missing.go", nil},
		{"glob *.go and https://example.com/main.go", nil},
		{"edit .env and README#L3", []string{".env", "README"}},
		{"", nil},
	}
	for _, tt := range tests {
		got := mentionedFiles(root, tt.task)
		if !slices.Equal(got, tt.want) {
			t.Errorf("mentionedFiles(%q) = %q, want %q", tt.task, got, tt.want)
		}
	}
}

func TestRepoNameFromURL(t *testing.T) {
	tests := []struct{ url, want string }{
		{"https://github.com/o/n.git", "o/n"},
		{"https://github.com/o/n/", "o/n"},
		{"git@github.com:o/n.git", "o/n"},
		{"ssh://git@host:22/group/sub/n", "sub/n"},
		{"/srv/git/n.git", "n"},
		{"../n", "n"},
		{"https://host", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := repoNameFromURL(tt.url); got != tt.want {
			t.Errorf("repoNameFromURL(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
