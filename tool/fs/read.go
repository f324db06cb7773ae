package fs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Limits of read_file.
const (
	MaxReadLines     = 2000      // lines shown per call
	MaxReadBytes     = 256 << 10 // bytes of output per call
	MaxReadLineBytes = 2000      // bytes shown of one line
)

type readArgs struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

// ReadFile returns the read_file tool: a text file's lines, numbered.
func ReadFile(ws *workspace.Workspace) tool.Tool {
	return &fsTool{
		spec: model.ToolSpec{
			Name: "read_file",
			Description: fmt.Sprintf("Read a text file in the workspace. Each line is shown as its line number, a tab, then the text; "+
				"the numbers are not part of the file, so leave them out when you copy text into edit_file. "+
				"Shows at most %d lines or %d KiB per call; pass start_line and end_line to read a large file in parts. "+
				"Binary files are refused.", MaxReadLines, MaxReadBytes>>10),
			Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace root, e.g. src/main.go"},
    "start_line": {"type": "integer", "minimum": 1, "description": "First line to show, counting from 1 (default 1)"},
    "end_line": {"type": "integer", "minimum": 1, "description": "Last line to show, inclusive (default: as many as the limits allow)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
		},
		effect:     tool.EffectRead,
		idempotent: true,
		run: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			a, err := decode[readArgs]("read_file", raw)
			if err != nil {
				return tool.Result{}, err
			}
			return readFile(ctx, ws, a)
		},
	}
}

func readFile(ctx context.Context, ws *workspace.Workspace, a readArgs) (tool.Result, error) {
	start, end := max(a.StartLine, 1), a.EndLine
	if end != 0 && end < start {
		return tool.Result{}, fmt.Errorf("end_line %d is before start_line %d; pass end_line >= start_line", end, start)
	}
	t, err := resolve(ws, a.Path)
	if err != nil {
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
	defer f.Close()

	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(8000)
	if workspace.LooksBinary(head) {
		size := "unknown size"
		if fi, err := f.Stat(); err == nil {
			size = plural(int(fi.Size()), "byte")
		}
		return tool.Result{}, fmt.Errorf("%s is a binary file (%s); read_file shows text files only; inspect it with execute_command (e.g. file or xxd) if you must", t.rel, size)
	}

	limit := start + MaxReadLines - 1 // last line the line cap allows
	if end != 0 {
		limit = min(limit, end)
	}
	var out strings.Builder
	total, last := 0, 0 // lines in the file, last line shown
	byteCapped := false
	for {
		if total%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return tool.Result{}, err
			}
		}
		line, dropped, err := readLine(br, MaxReadLineBytes)
		if len(line) == 0 && dropped == 0 && err != nil {
			if err != io.EOF {
				return tool.Result{}, describe(t, err)
			}
			break
		}
		total++
		if total < start || total > limit || byteCapped {
			continue
		}
		text := strings.TrimSuffix(string(line), "\n")
		if dropped > 0 {
			text += fmt.Sprintf(" … [line truncated: %d more bytes]", dropped)
		}
		entry := fmt.Sprintf("%6d\t%s\n", total, text)
		if out.Len()+len(entry) > MaxReadBytes {
			byteCapped = true
			continue
		}
		out.WriteString(entry)
		last = total
	}

	switch {
	case total == 0:
		return ok("%s is empty (0 lines)", t.rel)
	case start > total:
		return tool.Result{}, fmt.Errorf("start_line %d is past the end of %s, which has %s", start, t.rel, plural(total, "line"))
	}
	wantEnd := total
	if end != 0 {
		wantEnd = min(end, total)
	}
	switch {
	case byteCapped:
		fmt.Fprintf(&out, "[truncated at %d KiB: showing lines %d-%d of %d; use start_line/end_line to read the rest]\n", MaxReadBytes>>10, start, last, total)
	case last < wantEnd:
		fmt.Fprintf(&out, "[truncated: showing lines %d-%d of %d; use start_line/end_line to read the rest]\n", start, last, total)
	case start > 1 || last < total:
		fmt.Fprintf(&out, "[showing lines %d-%d of %d]\n", start, last, total)
	}
	return tool.Result{Output: out.String()}, nil
}

// openRegular opens t for reading, refusing directories and special files
// (a FIFO would block; O_NONBLOCK keeps the open itself from blocking).
func openRegular(root *os.Root, t target) (*os.File, error) {
	f, err := root.OpenFile(t.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, describe(t, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, describe(t, err)
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, fmt.Errorf("%s is a directory, not a file; use list_dir to see what it contains", t.rel)
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s); only regular files can be read", t.rel, fi.Mode().Type())
	}
	return f, nil
}

// readLine returns the next line with its newline, keeping at most max
// bytes of it (cut at a UTF-8 boundary) and counting the bytes dropped.
func readLine(br *bufio.Reader, max int) (line []byte, dropped int, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if room := max - len(line); room > 0 {
			keep := chunk
			if len(keep) > room {
				keep = keep[:runeStart(keep, room)]
			}
			line = append(line, keep...)
			dropped += len(chunk) - len(keep)
		} else {
			dropped += len(chunk)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if dropped > 0 && len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			dropped-- // the newline is not content
		}
		return line, dropped, err
	}
}

// runeStart returns the largest i <= n that does not split a UTF-8 sequence.
func runeStart(b []byte, n int) int {
	for i := n; i > 0 && i > n-4; i-- {
		if b[i]&0xC0 != 0x80 {
			return i
		}
	}
	return n
}
