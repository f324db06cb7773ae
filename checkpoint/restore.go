package checkpoint

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/internal/teststop"
)

// What restoring a checkpoint does to one file of the workspace.
const (
	Added    = "added"    // the checkpoint holds it, the workspace does not: it comes back
	Modified = "modified" // both hold it, with different content or mode
	Deleted  = "deleted"  // the workspace holds it, the checkpoint does not: it goes away
)

// Change is what restoring a checkpoint does to one file.
type Change struct {
	// Path is relative to the workspace, with forward slashes.
	Path   string `json:"path"`
	Change string `json:"change"`
}

// Changes lists, by path, what restoring checkpoint id of the session
// into workspace would do to it as it is now. Only files a snapshot holds
// are compared: the workspace's .git, its ignored files and files larger
// than the size limit are neither listed nor ever touched by Restore. The
// workspace is not changed; a missing workspace has every file added.
func (s *Store) Changes(ctx context.Context, sessionID, id, workspace string) ([]Change, error) {
	gd, err := s.checkpointRepo(ctx, sessionID, id)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(workspace); os.IsNotExist(err) {
		out, err := git(ctx, gd, "", "", nil, "ls-tree", "-r", "-z", "--name-only", id+"^{tree}")
		if err != nil {
			return nil, err
		}
		var all []Change
		for _, p := range splitZ(out) {
			all = append(all, Change{Path: p, Change: Added})
		}
		return all, nil
	}
	if info, err := os.Stat(workspace); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("checkpoint: workspace %s is not a directory: %v", workspace, err)
	}
	if err := s.excludeLarge(gd, workspace); err != nil {
		return nil, err
	}
	// The workspace is read into an index of its own, started from the
	// snapshots' index so that unchanged files are not hashed again.
	index, err := scratchIndex(gd)
	if err != nil {
		return nil, err
	}
	defer os.Remove(index)
	if _, err := git(ctx, gd, workspace, index, nil, "add", "-A", "--ignore-errors", "."); err != nil {
		return nil, err
	}
	// From the checkpoint to the workspace: A is a file only the
	// workspace has (restoring deletes it), D one only the checkpoint has
	// (restoring adds it back).
	out, err := git(ctx, gd, workspace, index, nil, "diff", "--cached", "--no-renames", "--name-status", "-z", id+"^{tree}", "--")
	if err != nil {
		return nil, err
	}
	return nameStatus(out, Deleted, Added), nil
}

// Restore makes workspace hold the files of checkpoint id of the session,
// in place: files the checkpoint lacks are deleted (and directories that
// deleting them emptied), files it holds are written where missing or
// different, each written whole. What Changes leaves out is never
// touched. It returns what it changed. Restore is idempotent: one cut
// short (the process was killed) is finished by running it again.
func (s *Store) Restore(ctx context.Context, sessionID, id, workspace string) ([]Change, error) {
	changes, err := s.Changes(ctx, sessionID, id, workspace)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: cannot create workspace %s: %w", workspace, err)
	}
	var write []string
	for _, c := range changes {
		if c.Change != Deleted {
			write = append(write, c.Path)
			continue
		}
		p := filepath.Join(workspace, filepath.FromSlash(c.Path))
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("checkpoint: restoring %s: %w", workspace, err)
		}
		removeEmptyParents(workspace, filepath.Dir(p))
	}
	teststop.At("rewind-restore-between-deletes-and-writes")
	if len(write) > 0 {
		gd, _ := s.gitDir(sessionID)
		index, err := scratchIndex(gd)
		if err != nil {
			return nil, err
		}
		defer os.Remove(index)
		if _, err := git(ctx, gd, "", index, nil, "read-tree", id+"^{tree}"); err != nil {
			return nil, err
		}
		list := []byte(strings.Join(write, "\x00") + "\x00")
		if _, err := git(ctx, gd, workspace, index, list, "checkout-index", "-f", "-z", "--stdin"); err != nil {
			return nil, err
		}
	}
	if err := syncFiles(workspace, changes); err != nil {
		return nil, err
	}
	return changes, nil
}

// checkpointRepo is the session's shadow repository, checked to hold
// checkpoint id.
func (s *Store) checkpointRepo(ctx context.Context, sessionID, id string) (string, error) {
	gd, err := s.gitDir(sessionID)
	if err != nil {
		return "", err
	}
	if !idPattern.MatchString(id) {
		return "", fmt.Errorf("checkpoint: %q is not a checkpoint id: %w", id, ErrNotFound)
	}
	if _, err := os.Stat(filepath.Join(gd, "HEAD")); err != nil {
		return "", fmt.Errorf("checkpoint: session %s has no checkpoints on this machine (%s): %w", sessionID, s.Root, ErrNotFound)
	}
	if _, err := git(ctx, gd, "", "", nil, "cat-file", "-e", id+"^{commit}"); err != nil {
		return "", fmt.Errorf("checkpoint %s of session %s: %w", id, sessionID, ErrNotFound)
	}
	return gd, nil
}

// scratchIndex is a new index file in the shadow repository gd, a copy
// of its snapshots' index when there is one; the caller removes it.
func scratchIndex(gd string) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	index := filepath.Join(gd, "index-restore-"+hex.EncodeToString(b[:]))
	if data, err := os.ReadFile(filepath.Join(gd, "index")); err == nil {
		if err := os.WriteFile(index, data, 0o600); err != nil {
			return "", fmt.Errorf("checkpoint: %w", err)
		}
	}
	return index, nil
}

// removeEmptyParents removes dir and its parents up to (not including)
// root while they are empty.
func removeEmptyParents(root, dir string) {
	root = filepath.Clean(root)
	for dir = filepath.Clean(dir); dir != root && strings.HasPrefix(dir, root+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil { // not empty (or gone): stop
			return
		}
	}
}

// syncFiles makes the restored files and the directories that changed
// durable, so a restore counted as done is on disk. They are synced a
// few at a time: one by one, waiting on the disk dominated a restore.
func syncFiles(workspace string, changes []Change) error {
	dirs := map[string]bool{workspace: true}
	var paths []string
	for _, c := range changes {
		p := filepath.Join(workspace, filepath.FromSlash(c.Path))
		dirs[filepath.Dir(p)] = true
		if c.Change != Deleted {
			paths = append(paths, p)
		}
	}
	files := len(paths)
	for d := range dirs {
		paths = append(paths, d)
	}
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(syncers, len(paths)) {
		wg.Go(func() {
			for i := range next {
				errs[i] = syncPath(paths[i])
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	// A directory that deleting emptied is gone: only files count.
	if err := errors.Join(errs[:files]...); err != nil {
		return fmt.Errorf("checkpoint: restoring %s: %w", workspace, err)
	}
	return nil
}

// syncers is how many files syncFiles syncs at once.
const syncers = 16

func syncPath(p string) error {
	info, err := os.Lstat(p)
	if err != nil || info.Mode()&os.ModeSymlink != 0 {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// nameStatus reads git's --name-status -z output as changes sorted by
// path: a file git lists as A is given the change added, D deleted, any
// other status Modified.
func nameStatus(out []byte, added, deleted string) []Change {
	f := splitZ(out)
	var changes []Change
	for i := 0; i+1 < len(f); i += 2 {
		c := Change{Path: f[i+1], Change: Modified}
		switch f[i] {
		case "A":
			c.Change = added
		case "D":
			c.Change = deleted
		}
		changes = append(changes, c)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes
}

// splitZ splits git's NUL-terminated output.
func splitZ(out []byte) []string {
	var f []string
	for _, b := range bytes.Split(out, []byte{0}) {
		if len(b) > 0 {
			f = append(f, string(b))
		}
	}
	return f
}
