package fs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// MaxEditBytes is the largest file edit_file will change.
const MaxEditBytes = 8 << 20

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// WriteFile returns the write_file tool: create or overwrite a file.
func WriteFile(ws *workspace.Workspace) tool.Tool {
	return &fsTool{
		spec: model.ToolSpec{
			Name: "write_file",
			Description: "Create a file or replace its whole content. Missing parent directories are created. " +
				"To change part of an existing file, use edit_file instead of rewriting it.",
			Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace root, e.g. src/main.go"},
    "content": {"type": "string", "description": "The complete new content of the file"}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
		},
		effect:     tool.EffectWrite,
		idempotent: true,
		run: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			a, err := decode[writeArgs]("write_file", raw)
			if err != nil {
				return tool.Result{}, err
			}
			return writeFile(ctx, ws, a)
		},
	}
}

func writeFile(ctx context.Context, ws *workspace.Workspace, a writeArgs) (tool.Result, error) {
	t, err := resolve(ws, a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	if err := guardWrite(t); err != nil {
		return tool.Result{}, err
	}
	root, err := ws.OpenRoot()
	if err != nil {
		return tool.Result{}, err
	}
	defer root.Close()

	kind := tool.Created
	switch fi, err := root.Stat(t.rel); {
	case err == nil && fi.IsDir():
		return tool.Result{}, fmt.Errorf("%s is a directory; give the path of a file inside it", t.rel)
	case err == nil && !fi.Mode().IsRegular():
		return tool.Result{}, fmt.Errorf("%s is not a regular file (%s); write_file only writes regular files", t.rel, fi.Mode().Type())
	case err == nil:
		kind = tool.Changed
		if fi.Size() == int64(len(a.Content)) {
			if old, err := root.ReadFile(t.rel); err == nil && string(old) == a.Content {
				return ok("%s already has this content; nothing changed", t.rel)
			}
		}
	case !errors.Is(err, iofs.ErrNotExist):
		return tool.Result{}, describe(t, err)
	}

	if err := ws.BeforeChange(t.abs); err != nil {
		return tool.Result{}, err
	}
	if dir := path.Dir(t.rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return tool.Result{}, fmt.Errorf("cannot create the directory %s for %s: %v; a path component may be a file", dir, t.rel, err)
		}
	}
	if err := writeUnlinked(root, t.rel, []byte(a.Content), 0o644); err != nil {
		return tool.Result{}, describe(t, err)
	}
	ws.Report(ctx, t.abs, kind)
	verb := "created"
	if kind == tool.Changed {
		verb = "overwrote"
	}
	return ok("%s %s (%s, %s)", verb, t.rel, plural(countLines(a.Content), "line"), plural(len(a.Content), "byte"))
}

type editArgs struct {
	Path       string `json:"path"`
	OldText    string `json:"old_text"`
	NewText    string `json:"new_text"`
	ReplaceAll bool   `json:"replace_all"`
}

// EditFile returns the edit_file tool: exact search and replace in a file.
func EditFile(ws *workspace.Workspace) tool.Tool {
	return &fsTool{
		spec: model.ToolSpec{
			Name: "edit_file",
			Description: "Replace exact text in an existing file. old_text must match the file exactly, including " +
				"indentation and line breaks, and must occur exactly once unless replace_all is true; include a few " +
				"surrounding lines to make it unique. Read the file first and copy the text without read_file's line numbers.",
			Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace root"},
    "old_text": {"type": "string", "minLength": 1, "description": "The exact text to replace"},
    "new_text": {"type": "string", "description": "The text to put in its place (empty to delete it)"},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of requiring exactly one (default false)"}
  },
  "required": ["path", "old_text", "new_text"],
  "additionalProperties": false
}`),
		},
		effect: tool.EffectWrite,
		run: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			a, err := decode[editArgs]("edit_file", raw)
			if err != nil {
				return tool.Result{}, err
			}
			return editFile(ctx, ws, a)
		},
	}
}

func editFile(ctx context.Context, ws *workspace.Workspace, a editArgs) (tool.Result, error) {
	if a.OldText == "" {
		return tool.Result{}, errors.New("old_text is empty; copy the exact text to replace from the file (to create a file, use write_file)")
	}
	t, err := resolve(ws, a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	if err := guardWrite(t); err != nil {
		return tool.Result{}, err
	}
	root, err := ws.OpenRoot()
	if err != nil {
		return tool.Result{}, err
	}
	defer root.Close()
	f, err := openRegular(root, t)
	if err != nil {
		return tool.Result{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return tool.Result{}, describe(t, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEditBytes+1))
	f.Close()
	if err != nil {
		return tool.Result{}, describe(t, err)
	}
	if len(data) > MaxEditBytes {
		return tool.Result{}, fmt.Errorf("%s is larger than edit_file handles (%d MiB); change it with execute_command", t.rel, MaxEditBytes>>20)
	}
	if workspace.LooksBinary(data) {
		return tool.Result{}, fmt.Errorf("%s is a binary file; edit_file changes text files only", t.rel)
	}
	text := string(data)
	oldText, newText := a.OldText, a.NewText
	n := strings.Count(text, oldText)
	if n == 0 && strings.Contains(text, "\r\n") && !strings.Contains(oldText, "\r") {
		// The file has Windows line endings the model did not copy.
		crlf := strings.ReplaceAll(oldText, "\n", "\r\n")
		if n = strings.Count(text, crlf); n > 0 {
			oldText, newText = crlf, strings.ReplaceAll(newText, "\n", "\r\n")
		}
	}
	switch {
	case n == 0:
		return tool.Result{}, notFound(t.rel, text, a.OldText)
	case oldText == newText:
		return tool.Result{}, errors.New("old_text and new_text are identical, so nothing would change; pass the new text in new_text")
	case n > 1 && !a.ReplaceAll:
		return tool.Result{}, fmt.Errorf("old_text occurs %d times in %s (lines %s); include more surrounding lines to make it unique, or set replace_all to true",
			n, t.rel, lineList(occurrenceLines(text, oldText, n)))
	}

	lines := occurrenceLines(text, oldText, n)
	var updated string
	if a.ReplaceAll {
		updated = strings.ReplaceAll(text, oldText, newText)
	} else {
		updated = strings.Replace(text, oldText, newText, 1)
	}
	if err := ws.BeforeChange(t.abs); err != nil {
		return tool.Result{}, err
	}
	if err := writeUnlinked(root, t.rel, []byte(updated), fi.Mode().Perm()); err != nil {
		return tool.Result{}, describe(t, err)
	}
	ws.Report(ctx, t.abs, tool.Changed)

	var out strings.Builder
	if n == 1 {
		fmt.Fprintf(&out, "edited %s: replaced 1 occurrence at line %d\n", t.rel, lines[0])
	} else {
		fmt.Fprintf(&out, "edited %s: replaced %d occurrences (lines %s)\n", t.rel, n, lineList(lines))
	}
	// Show the first replacement in place so the model can check it.
	first := lines[0]
	out.WriteString(excerpt(updated, first-3, first+countLines(newText)+2, 40))
	return tool.Result{Output: out.String()}, nil
}

// occurrenceLines returns the line numbers of up to limit non-overlapping
// occurrences of sub in s.
func occurrenceLines(s, sub string, limit int) []int {
	var out []int
	line, pos := 1, 0
	for len(out) < limit {
		i := strings.Index(s[pos:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(s[pos:pos+i], "\n")
		out = append(out, line)
		line += strings.Count(sub, "\n")
		pos += i + len(sub)
	}
	return out
}

// lineList formats line numbers, at most ten of them.
func lineList(ns []int) string {
	var s []string
	for i, n := range ns {
		if i == 10 {
			s = append(s, "…")
			break
		}
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ", ")
}

// excerpt returns lines from..to (1-based, clamped) of s, numbered like
// read_file, at most limit lines.
func excerpt(s string, from, to, limit int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	from = max(from, 1)
	to = min(to, len(lines), from+limit-1)
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, strings.TrimSuffix(lines[i-1], "\n"))
	}
	return b.String()
}

// notFound explains why old_text was not found, with a hint when the text
// is there but differs in line numbers or whitespace.
func notFound(rel, text, old string) error {
	msg := fmt.Sprintf("old_text not found in %s; read the file first and copy the exact text", rel)
	if hasLineNumbers(old) {
		return errors.New(msg + ". old_text seems to start lines with read_file's line numbers; copy only the text after the tab")
	}
	if line, ok := fuzzyLine(text, old); ok {
		return fmt.Errorf("%s. Lines %d-%d match if whitespace is ignored; copy their exact indentation and spacing",
			msg, line, line+len(nonEmptyLines(old))-1)
	}
	return errors.New(msg)
}

func hasLineNumbers(s string) bool {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for _, l := range lines {
		num, _, found := strings.Cut(strings.TrimLeft(l, " "), "\t")
		if !found || num == "" {
			return false
		}
		if _, err := strconv.Atoi(num); err != nil {
			return false
		}
	}
	return true
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return out
}

// fuzzyLine finds old in text comparing lines with their whitespace
// normalised and blank lines of old skipped; it returns the 1-based line.
func fuzzyLine(text, old string) (int, bool) {
	want := nonEmptyLines(old)
	if len(want) == 0 {
		return 0, false
	}
	lines := strings.Split(text, "\n")
	for i := 0; i+len(want) <= len(lines); i++ {
		match := true
		for j, w := range want {
			if strings.Join(strings.Fields(lines[i+j]), " ") != w {
				match = false
				break
			}
		}
		if match {
			return i + 1, true
		}
	}
	return 0, false
}

type deleteArgs struct {
	Path string `json:"path"`
}

// DeleteFile returns the delete_file tool. Deleting a symlink removes the
// link, not what it points to.
func DeleteFile(ws *workspace.Workspace) tool.Tool {
	return &fsTool{
		spec: model.ToolSpec{
			Name:        "delete_file",
			Description: "Delete one file from the workspace. Directories are not deleted; use execute_command for that.",
			Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace root"}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
		},
		effect: tool.EffectWrite,
		// Running it twice leaves the same state; the second run reports
		// that the file does not exist.
		idempotent: true,
		run: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			a, err := decode[deleteArgs]("delete_file", raw)
			if err != nil {
				return tool.Result{}, err
			}
			return deleteFile(ctx, ws, a)
		},
	}
}

func deleteFile(ctx context.Context, ws *workspace.Workspace, a deleteArgs) (tool.Result, error) {
	// Resolving the whole path refuses links that lead outside, even though
	// only the link itself would be removed: one rule for every tool.
	t, err := resolve(ws, a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	clean := filepath.Clean(a.Path)
	if base := filepath.Base(clean); base != ".." && base != "." && base != string(filepath.Separator) {
		// The file to remove is the last component itself, which may be a
		// symlink: resolve only its directory.
		dir, err := resolve(ws, filepath.Dir(clean))
		if err != nil {
			return tool.Result{}, err
		}
		link := filepath.Join(dir.abs, base)
		t = target{given: a.Path, abs: link, rel: ws.Rel(link)}
	}
	if err := guardWrite(t); err != nil {
		return tool.Result{}, err
	}
	root, err := ws.OpenRoot()
	if err != nil {
		return tool.Result{}, err
	}
	defer root.Close()
	fi, err := root.Lstat(t.rel)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return tool.Result{}, fmt.Errorf("%s does not exist, so nothing was deleted; use list_dir to check the path", t.rel)
	case err != nil:
		return tool.Result{}, describe(t, err)
	case fi.IsDir():
		return tool.Result{}, fmt.Errorf("%s is a directory; delete_file deletes single files (remove directories with execute_command)", t.rel)
	}
	if err := ws.BeforeChange(t.abs); err != nil {
		return tool.Result{}, err
	}
	if err := root.Remove(t.rel); err != nil {
		return tool.Result{}, describe(t, err)
	}
	ws.Report(ctx, t.abs, tool.Deleted)
	what := ""
	if fi.Mode()&iofs.ModeSymlink != 0 {
		what = "the symlink "
	}
	return ok("deleted %s%s", what, t.rel)
}

// writeUnlinked writes a file of the workspace. A file with other hard
// links (which may be outside the workspace) is replaced by a new file
// rather than written through: the other names keep the old content.
func writeUnlinked(root *os.Root, rel string, data []byte, perm os.FileMode) error {
	if fi, err := root.Lstat(rel); err == nil && fi.Mode().IsRegular() {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			if err := root.Remove(rel); err != nil {
				return err
			}
		}
	}
	return root.WriteFile(rel, data, perm)
}
