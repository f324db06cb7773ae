// Package checkpoint keeps snapshots of a session's workspace, so a
// session can be forked (or rewound) with its files as they were at a
// step.
//
// Each session has a shadow git repository under the store's root,
// outside the workspace: its own GIT_DIR and GIT_INDEX_FILE, the
// workspace as the work tree. What a snapshot holds and never touches:
//
//   - The workspace's own .git (at any depth) is never read into a
//     snapshot nor written: the shadow repository excludes it in its
//     info/exclude, and every git command runs with the user's git
//     environment variables removed.
//   - The workspace's .gitignore files are honoured: ignored files are
//     not in a snapshot.
//   - Files larger than MaxFileSize are skipped (listed in info/exclude
//     at each Save), so one build artefact does not fill the disk.
//   - Save never changes the workspace; Export writes only into a new
//     directory, which appears whole or not at all (it is written beside
//     its final name and renamed).
//
// Checkpoints are local to the machine that took them: a session resumed
// on another machine takes new ones there, and can be forked only at
// steps whose checkpoints that machine holds.
//
// The git binary does the work (git 2.20 or newer on PATH).
package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// DefaultMaxFileSize is the largest file a snapshot holds when the Store
// names no limit.
const DefaultMaxFileSize = 10 << 20

// ErrNotFound is returned (wrapped) by Export for a checkpoint the
// session's shadow repository does not hold.
var ErrNotFound = errors.New("checkpoint not found")

// Store keeps the shadow repositories of sessions under Root.
type Store struct {
	// Root holds one shadow repository per session (ROOT/ID.git).
	Root string
	// MaxFileSize skips larger files; zero means DefaultMaxFileSize.
	MaxFileSize int64
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// gitDir is the shadow repository of a session.
func (s *Store) gitDir(sessionID string) (string, error) {
	if sessionID == "" || strings.ContainsAny(sessionID, `/\`) || sessionID == "." || sessionID == ".." {
		return "", fmt.Errorf("checkpoint: invalid session id %q", sessionID)
	}
	return filepath.Join(s.Root, sessionID+".git"), nil
}

// git runs git on the shadow repository dir with work tree wt (empty:
// none) and index file index (empty: the repository's own). The
// process's GIT_* variables are dropped, so a user's GIT_DIR or
// GIT_INDEX_FILE never points git at their repository.
func git(ctx context.Context, dir, wt, index string, stdin []byte, args ...string) ([]byte, error) {
	full := append([]string{"-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.fsmonitor=false",
		"-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0", "-c", "core.quotePath=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	env := []string{"GIT_DIR=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=agentloop", "GIT_AUTHOR_EMAIL=agentloop@localhost",
		"GIT_COMMITTER_NAME=agentloop", "GIT_COMMITTER_EMAIL=agentloop@localhost"}
	if wt != "" {
		env = append(env, "GIT_WORK_TREE="+wt)
		cmd.Dir = wt
	} else {
		cmd.Dir = filepath.Dir(dir) // dir itself may not exist yet (init)
	}
	if index != "" {
		env = append(env, "GIT_INDEX_FILE="+index)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("checkpoint: git is not on PATH (install git, or turn checkpoints off): %w", err)
		}
		return out, fmt.Errorf("checkpoint: git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// baseExclude keeps every .git out of a snapshot.
const baseExclude = "# written by agentloop: the workspace's own repositories are never snapshotted\n.git\n"

// writing takes the checkpoints directory's lock shared, for a write into
// session sessionID's repository (removals wait for it to end), and drops
// the session's deleted mark: its ID is in use again.
func (s *Store) writing(sessionID string) (unlock func(), err error) {
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: cannot create %s: %w (set the checkpoints directory)", s.Root, err)
	}
	if unlock, err = s.lockRoot(false); err != nil {
		return nil, err
	}
	if err := s.revive(sessionID); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// open creates the session's shadow repository when it is missing.
func (s *Store) open(ctx context.Context, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return fmt.Errorf("checkpoint: cannot create %s: %w (set the checkpoints directory)", s.Root, err)
	}
	if _, err := git(ctx, dir, "", "", nil, "init", "-q", "--bare", dir); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "info", "exclude"), []byte(baseExclude), 0o600)
}

// Save snapshots workspace into the session's shadow repository and
// returns the snapshot's id (a git commit id). label is the commit's
// message.
func (s *Store) Save(ctx context.Context, sessionID, workspace, label string) (string, error) {
	dir, err := s.gitDir(sessionID)
	if err != nil {
		return "", err
	}
	if workspace == "" {
		return "", fmt.Errorf("checkpoint: session %s has no workspace", sessionID)
	}
	if info, err := os.Stat(workspace); err != nil || !info.IsDir() {
		return "", fmt.Errorf("checkpoint: workspace %s is not a directory: %v", workspace, err)
	}
	unlock, err := s.writing(sessionID)
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := s.open(ctx, dir); err != nil {
		return "", err
	}
	if err := s.excludeLarge(dir, workspace); err != nil {
		return "", err
	}
	index := filepath.Join(dir, "index")
	if _, err := git(ctx, dir, workspace, index, nil, "add", "-A", "--ignore-errors", "."); err != nil {
		return "", err
	}
	tree, err := git(ctx, dir, workspace, index, nil, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", strings.TrimSpace(string(tree)), "-m", label}
	if head, err := git(ctx, dir, "", "", nil, "rev-parse", "-q", "--verify", "HEAD^{commit}"); err == nil {
		args = append(args, "-p", strings.TrimSpace(string(head)))
	}
	commit, err := git(ctx, dir, "", "", nil, args...)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(commit))
	// HEAD keeps every snapshot reachable: each is the parent of the next.
	if _, err := git(ctx, dir, "", "", nil, "update-ref", "HEAD", id); err != nil {
		return "", err
	}
	return id, nil
}

// excludeLarge rewrites info/exclude: the .git rule and every file of
// workspace larger than the limit.
func (s *Store) excludeLarge(dir, workspace string) error {
	limit := s.MaxFileSize
	if limit <= 0 {
		limit = DefaultMaxFileSize
	}
	var b strings.Builder
	b.WriteString(baseExclude)
	err := filepath.WalkDir(workspace, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: git skips it too (--ignore-errors)
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() <= limit {
			return nil
		}
		rel, err := filepath.Rel(workspace, path)
		if err != nil {
			return nil
		}
		b.WriteString("/" + escapePattern(filepath.ToSlash(rel)) + "\n")
		return nil
	})
	if err != nil {
		return fmt.Errorf("checkpoint: reading workspace %s: %w", workspace, err)
	}
	return os.WriteFile(filepath.Join(dir, "info", "exclude"), []byte(b.String()), 0o600)
}

// escapePattern makes a path match itself only in a gitignore pattern.
func escapePattern(p string) string {
	var b strings.Builder
	for _, r := range p {
		switch r {
		case '*', '?', '[', ']', '\\', '!', '#', ' ':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Export writes the files of checkpoint id of the session into dir,
// which must not exist yet. dir appears with every file or not at all.
func (s *Store) Export(ctx context.Context, sessionID, id, dir string) error {
	gd, err := s.gitDir(sessionID)
	if err != nil {
		return err
	}
	if !idPattern.MatchString(id) {
		return fmt.Errorf("checkpoint: %q is not a checkpoint id: %w", id, ErrNotFound)
	}
	if _, err := os.Stat(filepath.Join(gd, "HEAD")); err != nil {
		return fmt.Errorf("checkpoint: session %s has no checkpoints on this machine (%s): %w", sessionID, s.Root, ErrNotFound)
	}
	if _, err := git(ctx, gd, "", "", nil, "cat-file", "-e", id+"^{commit}"); err != nil {
		return fmt.Errorf("checkpoint %s of session %s: %w", id, sessionID, ErrNotFound)
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("checkpoint: %s already exists; choose a new directory", dir)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("checkpoint: cannot create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".export-")
	if err != nil {
		return fmt.Errorf("checkpoint: cannot write into %s: %w", parent, err)
	}
	defer os.RemoveAll(tmp)
	files := filepath.Join(tmp, "files")
	index := filepath.Join(tmp, "index")
	if _, err := git(ctx, gd, "", index, nil, "read-tree", id+"^{tree}"); err != nil {
		return err
	}
	if err := os.Mkdir(files, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if _, err := git(ctx, gd, files, index, nil, "checkout-index", "-a", "-f", "--prefix="+files+"/"); err != nil {
		return err
	}
	if err := os.Rename(files, dir); err != nil {
		return fmt.Errorf("checkpoint: moving the exported files to %s: %w", dir, err)
	}
	return nil
}

// Fork gives session to a shadow repository that starts at checkpoint id
// of session from: it reads from's snapshots through git alternates
// (nothing is copied), so every checkpoint id the forked log inherits
// resolves in it, and its next snapshot follows id. from's repository,
// and those from's reads in turn (a fork of a fork), must outlive to's.
func (s *Store) Fork(ctx context.Context, from, to, id string) error {
	src, err := s.gitDir(from)
	if err != nil {
		return err
	}
	dst, err := s.gitDir(to)
	if err != nil {
		return err
	}
	if !idPattern.MatchString(id) {
		return fmt.Errorf("checkpoint: %q is not a checkpoint id: %w", id, ErrNotFound)
	}
	// Held until dst lists src as an alternate: src cannot be removed
	// (release.go) between being found here and being listed.
	unlock, err := s.writing(to)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(src, "HEAD")); err != nil {
		return fmt.Errorf("checkpoint: session %s has no checkpoints on this machine (%s): %w", from, s.Root, ErrNotFound)
	}
	if _, err := git(ctx, src, "", "", nil, "cat-file", "-e", id+"^{commit}"); err != nil {
		return fmt.Errorf("checkpoint %s of session %s: %w", id, from, ErrNotFound)
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("checkpoint: session %s already has checkpoints (%s)", to, dst)
	}
	if err := s.open(ctx, dst); err != nil {
		return err
	}
	// Every repository the fork reads from is listed directly, by an
	// absolute path: git follows alternates only five deep, and forks of
	// forks go deeper; a relative path would be read from dst's objects.
	objects, err := filepath.Abs(filepath.Join(src, "objects"))
	if err != nil {
		os.RemoveAll(dst)
		return fmt.Errorf("checkpoint: %w", err)
	}
	alts := objects + "\n"
	if inherited, err := os.ReadFile(filepath.Join(src, "objects", "info", "alternates")); err == nil {
		alts += string(inherited)
	}
	alt := filepath.Join(dst, "objects", "info", "alternates")
	if err := os.WriteFile(alt, []byte(alts), 0o600); err != nil {
		os.RemoveAll(dst)
		return fmt.Errorf("checkpoint: %w", err)
	}
	if _, err := git(ctx, dst, "", "", nil, "update-ref", "HEAD", id); err != nil {
		os.RemoveAll(dst)
		return err
	}
	return nil
}
