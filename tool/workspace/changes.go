package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/agentloop/agentloop/tool"
)

// MaxSnapshotBytes is the largest file whose original content is kept for
// Diff; larger files are listed as changed without a diff.
const MaxSnapshotBytes = 1 << 20

// MaxSnapshotTotal bounds the memory all snapshots of one workspace may use.
const MaxSnapshotTotal = 64 << 20

// fileState is a file's content at one moment.
type fileState struct {
	// known is false when the file was changed before its content could be
	// observed (a shell command changed it): nothing else is meaningful.
	known  bool
	exists bool
	data   []byte // nil when note is set
	binary bool
	note   string // why data was not kept
}

// OpenRoot opens the workspace root as an *os.Root, through which every
// file operation stays beneath the root even if a symlink is swapped in
// concurrently. The caller closes it.
func (w *Workspace) OpenRoot() (*os.Root, error) {
	r, err := os.OpenRoot(w.root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s cannot be opened: %w", w.given, err)
	}
	return r, nil
}

// readState reads the file at rel (a slash path relative to root).
func readState(root *os.Root, rel string) (fileState, error) {
	f, err := root.Open(filepath.FromSlash(rel))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fileState{known: true}, nil
	}
	if err != nil {
		return fileState{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileState{}, err
	}
	if fi.IsDir() {
		return fileState{known: true}, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSnapshotBytes+1))
	if err != nil {
		return fileState{}, err
	}
	if len(data) > MaxSnapshotBytes {
		return fileState{known: true, exists: true, note: fmt.Sprintf("larger than %d KiB", MaxSnapshotBytes>>10)}, nil
	}
	return fileState{known: true, exists: true, data: data, binary: LooksBinary(data)}, nil
}

// BeforeChange records the current content of the file at path (absolute
// inside the root, or relative to it) unless it was recorded before, so Diff
// can show the file against its content before the session first touched it.
// Tools call it just before they modify a file.
func (w *Workspace) BeforeChange(path string) error {
	rel, ok := w.relPath(path)
	if !ok {
		return &OutsideError{Path: path, Root: w.given}
	}
	w.mu.Lock()
	_, done := w.orig[rel]
	w.mu.Unlock()
	if done {
		return nil
	}
	root, err := w.OpenRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	st, err := readState(root, rel)
	if err != nil {
		return fmt.Errorf("cannot read %s before changing it: %w", rel, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, done := w.orig[rel]; done {
		return nil
	}
	if w.kept()+int64(len(st.data)) > MaxSnapshotTotal {
		st.data, st.binary = nil, false
		st.note = fmt.Sprintf("not recorded (the session's %d MiB snapshot budget is used up)", MaxSnapshotTotal>>20)
	}
	w.orig[rel] = &st
	return nil
}

func (w *Workspace) kept() int64 {
	var n int64
	for _, o := range w.orig {
		n += int64(len(o.data))
	}
	return n
}

// Record notes that the file at path (absolute inside the root, or relative
// to it) was created, changed or deleted. Repeated records merge into the net
// change since the session began: created then changed is created, changed
// then deleted is deleted, created then deleted is no change at all. Paths
// outside the root are ignored.
func (w *Workspace) Record(path string, kind tool.ModificationKind) {
	rel, ok := w.relPath(path)
	if !ok || rel == "." {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.orig[rel]; !ok {
		// Nobody snapshotted it; a created file did not exist before, but
		// the earlier content of a changed or deleted one is unknown.
		w.orig[rel] = &fileState{known: kind == tool.Created}
	}
	prev, had := w.changes[rel]
	next := kind
	if had {
		next = merge(prev, kind)
	}
	if next == "" {
		delete(w.changes, rel)
		return
	}
	w.changes[rel] = next
}

func merge(prev, kind tool.ModificationKind) tool.ModificationKind {
	switch prev {
	case tool.Created:
		if kind == tool.Deleted {
			return ""
		}
		return tool.Created
	case tool.Deleted:
		if kind == tool.Deleted {
			return tool.Deleted
		}
		return tool.Changed
	default:
		if kind == tool.Deleted {
			return tool.Deleted
		}
		return tool.Changed
	}
}

// Report records the modification and reports it to the loop through
// tool.ReportModification, with the path relative to the root.
func (w *Workspace) Report(ctx context.Context, path string, kind tool.ModificationKind) {
	rel, ok := w.relPath(path)
	if !ok || rel == "." {
		return
	}
	w.Record(rel, kind)
	tool.ReportModification(ctx, tool.Modification{Path: rel, Kind: kind})
}

// Changes returns the net modifications of the session, one per path,
// sorted by path. Paths are slash-separated and relative to the root.
func (w *Workspace) Changes() []tool.Modification {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]tool.Modification, 0, len(w.changes))
	for p, k := range w.changes {
		out = append(out, tool.Modification{Path: p, Kind: k})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Diff returns a unified diff of every modified file against its content
// before the session first modified it, in path order. Files whose content
// cannot be shown (binary, too large, or changed by a command before any
// snapshot) get a one-line note instead. A file that is back to its original
// content contributes nothing.
func (w *Workspace) Diff() (string, error) {
	changes := w.Changes()
	w.mu.Lock()
	before := make(map[string]fileState, len(changes))
	for _, c := range changes {
		before[c.Path] = *w.orig[c.Path]
	}
	w.mu.Unlock()

	root, err := w.OpenRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	var b strings.Builder
	var errs []error
	for _, c := range changes {
		after, err := readState(root, c.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("diff of %s: %w", c.Path, err))
			continue
		}
		b.WriteString(fileDiff(c, before[c.Path], after))
	}
	return b.String(), errors.Join(errs...)
}

func fileDiff(c tool.Modification, before, after fileState) string {
	name := c.Path
	if !before.known {
		return fmt.Sprintf("# %s: %s by a command; its earlier content was not recorded, so no diff is shown\n", name, c.Kind)
	}
	if before.exists == after.exists && before.note == "" && after.note == "" && bytes.Equal(before.data, after.data) {
		return ""
	}
	from, to := "a/"+name, "b/"+name
	if !before.exists {
		from = "/dev/null"
	}
	if !after.exists {
		to = "/dev/null"
	}
	switch {
	case before.binary || after.binary:
		return fmt.Sprintf("Binary files %s and %s differ\n", from, to)
	case before.note != "":
		return fmt.Sprintf("# %s: %s; its earlier content is %s, so no diff is shown\n", name, c.Kind, before.note)
	case after.note != "":
		return fmt.Sprintf("# %s: %s; its content is %s, so no diff is shown\n", name, c.Kind, after.note)
	}
	return UnifiedDiff(from, to, string(before.data), string(after.data))
}
