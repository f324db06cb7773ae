// Package workspace confines a session's file access to one directory tree
// and remembers what the session changed in it.
//
// Resolve turns a path from a model into an absolute path inside the root,
// following symlinks one component at a time and refusing any path that
// leaves the root — through "..", an absolute path elsewhere, or a symlink
// (final or intermediate) whose target is outside. The path it returns has
// every symlink resolved, so tools can then open it through an os.Root
// (which refuses escapes atomically) without racing a concurrent symlink swap.
//
// Record, Changes and Diff keep the session's modifications: which files were
// created, changed or deleted, and a unified diff of each against the content
// it had before the session first touched it.
package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/agentloop/agentloop/tool"
)

// ErrOutside is matched (errors.Is) by every error for a path that leaves
// the workspace.
var ErrOutside = errors.New("path is outside the workspace")

// OutsideError is the error for a path that leaves the workspace. Its text is
// written for the model.
type OutsideError struct {
	Path string // the path as given
	Root string // the workspace root
	// Link and Target are set when a symlink led outside: Link is the
	// symlink's path relative to the root, Target what it points to.
	Link, Target string
}

func (e *OutsideError) Error() string {
	if e.Link != "" {
		return fmt.Sprintf("path %s goes through the symlink %s -> %s, which leads outside the workspace %s; use a path inside the workspace",
			e.Path, e.Link, e.Target, e.Root)
	}
	return fmt.Sprintf("path %s is outside the workspace %s; use a path relative to the workspace root", e.Path, e.Root)
}

// Is makes errors.Is(err, ErrOutside) true, and errors.Is(err,
// fs.ErrPermission): the workspace refused access.
func (e *OutsideError) Is(target error) bool {
	return target == ErrOutside || target == iofs.ErrPermission
}

// maxLinks bounds symlink hops during resolution, like the kernel's ELOOP.
const maxLinks = 40

// Workspace is a directory tree a session may read and modify. It is safe
// for concurrent use.
type Workspace struct {
	root  string // absolute, symlinks resolved
	given string // absolute and clean, as passed to New (may contain symlinks)

	mu      sync.Mutex
	changes map[string]tool.ModificationKind // slash path relative to root
	orig    map[string]*fileState
}

// New returns a workspace rooted at dir, which must be an existing directory.
func New(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w; pass an existing directory", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory; pass a directory", dir)
	}
	return &Workspace{
		root:    real,
		given:   abs,
		changes: make(map[string]tool.ModificationKind),
		orig:    make(map[string]*fileState),
	}, nil
}

// Root returns the absolute root directory with symlinks resolved.
func (w *Workspace) Root() string { return w.root }

// Resolve returns the absolute path, with every symlink resolved, that path
// names inside the workspace. path may be relative to the root or absolute
// inside it. The path need not exist (tools create files), but whatever part
// of it exists is followed, and a path that leaves the root in any way is
// refused with an *OutsideError.
func (w *Workspace) Resolve(path string) (string, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte; use a plain relative path", path)
	}
	var parts []string
	if filepath.IsAbs(path) {
		rest, ok := w.stripRoot(path)
		if !ok {
			return "", &OutsideError{Path: path, Root: w.given}
		}
		parts = rest
	} else {
		parts = split(path)
	}
	// A path that climbs out by itself is refused before any symlink is
	// followed, so the message does not blame a link it merely passed.
	if c := filepath.Clean(filepath.Join(parts...)); c == ".." || strings.HasPrefix(c, "../") {
		return "", &OutsideError{Path: path, Root: w.given}
	}
	return w.walk(path, parts)
}

// stripRoot returns the components of the absolute path p below the root,
// matching either the resolved or the given form of the root. It compares
// components without cleaning p, so "/root/a/../x" is walked, not collapsed.
func (w *Workspace) stripRoot(p string) ([]string, bool) {
	pc := split(p)
	for _, root := range []string{w.root, w.given} {
		rc := split(root)
		if len(pc) < len(rc) {
			continue
		}
		match := true
		for i := range rc {
			if pc[i] != rc[i] {
				match = false
				break
			}
		}
		if match {
			return pc[len(rc):], true
		}
	}
	return nil, false
}

// split returns the path's components without empty and "." elements.
func split(p string) []string {
	var out []string
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// walk resolves parts from the root one component at a time, the way the
// kernel does: ".." goes to the parent of the directory reached so far (never
// above the root), symlinks are replaced by their targets. Components that do
// not exist are taken as they are.
func (w *Workspace) walk(orig string, parts []string) (string, error) {
	cur := w.root
	links := 0
	var link, target string // the last symlink followed, for error messages
	outside := func() error {
		return &OutsideError{Path: orig, Root: w.given, Link: link, Target: target}
	}
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		if c == ".." {
			if cur == w.root {
				return "", outside()
			}
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			// Nothing here to follow; the operation itself will report it.
			cur = next
			continue
		case err != nil:
			return "", fmt.Errorf("path %s: cannot resolve %s: %w", orig, w.Rel(next), err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("path %s: too many levels of symbolic links; use the real path", orig)
		}
		dest, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("path %s: cannot read symlink %s: %w", orig, w.Rel(next), err)
		}
		link, target = w.Rel(next), dest
		if filepath.IsAbs(dest) {
			rest, ok := w.stripRoot(dest)
			if !ok {
				return "", outside()
			}
			cur = w.root
			parts = append(rest, parts...)
		} else {
			parts = append(split(dest), parts...)
			// A relative target starting with ".." climbs from the link's
			// directory, which is cur; the ".." case above guards the root.
		}
	}
	return cur, nil
}

// Rel returns abs as a slash-separated path relative to the root ("." for
// the root itself). A path outside the root is returned unchanged.
func (w *Workspace) Rel(abs string) string {
	if r, ok := w.relPath(abs); ok {
		return r
	}
	return abs
}

// relPath makes p (absolute, or relative to the root) a clean slash path
// relative to the root; ok is false when p is outside the root.
func (w *Workspace) relPath(p string) (string, bool) {
	if filepath.IsAbs(p) {
		for _, root := range []string{w.root, w.given} {
			r, err := filepath.Rel(root, p)
			if err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				return filepath.ToSlash(r), true
			}
		}
		return "", false
	}
	r := filepath.Clean(p)
	if r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// LooksBinary reports whether data looks like the start of a binary file:
// like git, it looks for a NUL byte in the first 8000 bytes.
func LooksBinary(data []byte) bool {
	if len(data) > 8000 {
		data = data[:8000]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// IsVCSDir reports whether name is a version-control directory (.git, .hg,
// .svn). Tools never list, search or track files inside one.
func IsVCSDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn":
		return true
	}
	return false
}

// IsBulkyDir reports whether name is a directory of installed dependencies
// or caches (node_modules, __pycache__, .venv). Tools show it but do not
// descend into it unless asked to explicitly.
func IsBulkyDir(name string) bool {
	switch name {
	case "node_modules", "__pycache__", ".venv":
		return true
	}
	return false
}
