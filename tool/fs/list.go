package fs

import (
	"context"
	"encoding/json"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"strings"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Limits of list_dir.
const (
	DefaultListDepth = 2
	MaxListDepth     = 6
	MaxListEntries   = 500
)

type listArgs struct {
	Path  string `json:"path"`
	Depth int    `json:"depth"`
}

// ListDir returns the list_dir tool: a directory tree.
func ListDir(ws *workspace.Workspace) tool.Tool {
	return &fsTool{
		spec: model.ToolSpec{
			Name: "list_dir",
			Description: fmt.Sprintf("List a directory of the workspace as an indented tree. Directories end with /, symlinks show their target. "+
				".git is left out; node_modules, __pycache__ and .venv are shown but not expanded. At most %d entries are shown.",
				MaxListEntries),
			Parameters: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory relative to the workspace root (default: the root)"},
    "depth": {"type": "integer", "minimum": 1, "maximum": %d, "description": "How many levels to show (default %d)"}
  },
  "additionalProperties": false
}`, MaxListDepth, DefaultListDepth)),
		},
		effect:     tool.EffectRead,
		idempotent: true,
		run: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			a, err := decode[listArgs]("list_dir", raw)
			if err != nil {
				return tool.Result{}, err
			}
			return listDir(ctx, ws, a)
		},
	}
}

func listDir(ctx context.Context, ws *workspace.Workspace, a listArgs) (tool.Result, error) {
	depth := a.Depth
	if depth == 0 {
		depth = DefaultListDepth
	}
	depth = min(max(depth, 1), MaxListDepth)
	t, err := resolve(ws, a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	root, err := ws.OpenRoot()
	if err != nil {
		return tool.Result{}, err
	}
	defer root.Close()
	fi, err := root.Stat(t.rel)
	if err != nil {
		return tool.Result{}, describe(t, err)
	}
	if !fi.IsDir() {
		return tool.Result{}, fmt.Errorf("%s is a file, not a directory; use read_file to read it", t.rel)
	}

	l := lister{ctx: ctx, root: root}
	l.out.WriteString(strings.TrimSuffix(t.rel, "/") + "/\n")
	if err := l.walk(t.rel, 1, depth); err != nil {
		return tool.Result{}, err
	}
	switch {
	case l.n == 0:
		l.out.WriteString("  (empty directory)\n")
	case l.full:
		fmt.Fprintf(&l.out, "[truncated: showing the first %d entries; list a subdirectory or use a smaller depth]\n", MaxListEntries)
	}
	return tool.Result{Output: l.out.String()}, nil
}

type lister struct {
	ctx  context.Context
	root *os.Root
	out  strings.Builder
	n    int
	full bool
}

func (l *lister) walk(dir string, level, depth int) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	entries, err := iofs.ReadDir(l.root.FS(), dir)
	if err != nil && len(entries) == 0 {
		return fmt.Errorf("cannot list %s: %v", dir, err)
	}
	indent := strings.Repeat("  ", level)
	for _, e := range entries {
		name := e.Name()
		if workspace.IsVCSDir(name) {
			continue
		}
		if l.n == MaxListEntries {
			l.full = true
			return nil
		}
		l.n++
		p := path.Join(dir, name)
		switch {
		case e.Type()&iofs.ModeSymlink != 0:
			dest, err := l.root.Readlink(p)
			if err != nil {
				dest = "?"
			}
			fmt.Fprintf(&l.out, "%s%s -> %s\n", indent, name, dest)
		case e.IsDir() && workspace.IsBulkyDir(name):
			fmt.Fprintf(&l.out, "%s%s/ (not expanded)\n", indent, name)
		case e.IsDir():
			fmt.Fprintf(&l.out, "%s%s/\n", indent, name)
			if level < depth {
				if err := l.walk(p, level+1, depth); err != nil {
					if l.ctx.Err() != nil {
						return err
					}
					fmt.Fprintf(&l.out, "%s  (%v)\n", indent, err)
				}
				if l.full {
					return nil
				}
			}
		default:
			fmt.Fprintf(&l.out, "%s%s\n", indent, name)
		}
	}
	return nil
}
