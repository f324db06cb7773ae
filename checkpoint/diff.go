package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultMaxPatch is the longest patch text Diff returns when the Store
// names no limit; a longer one is cut at a line end and says so.
const DefaultMaxPatch = 1 << 20

// Side is one side of a Diff: a workspace directory as it is now (read
// with Save's rules: no .git, no ignored files, no file over the size
// limit), or else checkpoint ID of session Session. The zero Side is an
// empty workspace (a session that has neither). A directory side that
// names its Session is read starting from that session's snapshots, so
// files unchanged since its last checkpoint are neither hashed nor
// copied again.
type Side struct {
	Dir     string
	Session string
	ID      string
}

// Diff is what changes from one side to the other.
type Diff struct {
	// Files is every path that differs, sorted: Added means only the
	// second side has it, Deleted only the first, Modified both with
	// different content or mode.
	Files []Change
	// Patch is git's unified diff from the first side to the second
	// (binary files are named, not shown).
	Patch string
	// Truncated says Patch was cut at the size limit.
	Truncated bool
}

// Diff compares two sides, which may belong to different sessions
// (unrelated ones included). Nothing is written to the sides: the
// comparison runs in a scratch repository under the system's temporary
// directory that reads the sessions' snapshots through git alternates and
// is removed before Diff returns. maxPatch limits Patch (zero:
// DefaultMaxPatch).
func (s *Store) Diff(ctx context.Context, a, b Side, maxPatch int) (*Diff, error) {
	if maxPatch <= 0 {
		maxPatch = DefaultMaxPatch
	}
	scratch, err := os.MkdirTemp("", "agentloop-diff-")
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer os.RemoveAll(scratch)
	gd := filepath.Join(scratch, "repo.git")
	if _, err := git(ctx, gd, "", "", nil, "init", "-q", "--bare", gd); err != nil {
		return nil, err
	}
	var alternates []string
	for _, side := range []Side{a, b} {
		switch {
		case side.Dir != "" && side.Session != "":
			if src, ok := s.repoOf(side.Session); ok {
				alternates = append(alternates, filepath.Join(src, "objects"))
			}
		case side.Dir == "" && side.ID != "":
			src, err := s.checkpointRepo(ctx, side.Session, side.ID)
			if err != nil {
				return nil, err
			}
			alternates = append(alternates, filepath.Join(src, "objects"))
		}
	}
	if len(alternates) > 0 {
		for i, a := range alternates {
			// Relative paths would be read from the scratch repository.
			if abs, err := filepath.Abs(a); err == nil {
				alternates[i] = abs
			}
		}
		alt := filepath.Join(gd, "objects", "info", "alternates")
		if err := os.WriteFile(alt, []byte(strings.Join(alternates, "\n")+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
	}
	ta, err := s.sideTree(ctx, gd, a)
	if err != nil {
		return nil, err
	}
	tb, err := s.sideTree(ctx, gd, b)
	if err != nil {
		return nil, err
	}
	out, err := git(ctx, gd, "", "", nil, "diff-tree", "-r", "--no-renames", "--name-status", "-z", ta, tb)
	if err != nil {
		return nil, err
	}
	d := &Diff{Files: nameStatus(out, Added, Deleted)}
	patch, err := git(ctx, gd, "", "", nil, "diff-tree", "-r", "-p", "--no-renames", "--no-color", ta, tb)
	if err != nil {
		return nil, err
	}
	d.Patch = string(patch)
	if len(d.Patch) > maxPatch {
		cut := strings.LastIndexByte(d.Patch[:maxPatch], '\n') + 1
		d.Patch = d.Patch[:cut]
		d.Truncated = true
	}
	return d, nil
}

// sideTree is the id of a git tree holding side's files, written into the
// scratch repository gd when the side is a directory.
func (s *Store) sideTree(ctx context.Context, gd string, side Side) (string, error) {
	switch {
	case side.Dir != "":
		if info, err := os.Stat(side.Dir); err != nil || !info.IsDir() {
			return "", fmt.Errorf("checkpoint: workspace %s is not a directory: %v", side.Dir, err)
		}
		// The directory's own oversized files are excluded for this
		// read only: info/exclude is rewritten for each directory side.
		if err := s.excludeLarge(gd, side.Dir); err != nil {
			return "", err
		}
		index := filepath.Join(gd, "scratch-index")
		defer os.Remove(index) // each directory side starts from its own index
		if src, ok := s.repoOf(side.Session); ok {
			// The session's snapshots' index: git hashes only the files
			// whose size or time changed since.
			if data, err := os.ReadFile(filepath.Join(src, "index")); err == nil {
				if err := os.WriteFile(index, data, 0o600); err != nil {
					return "", fmt.Errorf("checkpoint: %w", err)
				}
			}
		}
		if _, err := git(ctx, gd, side.Dir, index, nil, "add", "-A", "--ignore-errors", "."); err != nil {
			return "", err
		}
		tree, err := git(ctx, gd, side.Dir, index, nil, "write-tree")
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(tree)), nil
	case side.ID != "":
		tree, err := git(ctx, gd, "", "", nil, "rev-parse", "--verify", side.ID+"^{tree}")
		if err != nil {
			return "", fmt.Errorf("checkpoint %s of session %s: %w", side.ID, side.Session, ErrNotFound)
		}
		return strings.TrimSpace(string(tree)), nil
	default:
		tree, err := git(ctx, gd, "", "", []byte{}, "mktree")
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(tree)), nil
	}
}

// repoOf is the shadow repository of session id when it has one here.
func (s *Store) repoOf(id string) (string, bool) {
	if id == "" || s.Root == "" {
		return "", false
	}
	gd, err := s.gitDir(id)
	if err != nil {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(gd, "HEAD")); err != nil {
		return "", false
	}
	return gd, true
}
