// Package fs provides the file tools a model uses to work in a workspace:
// read_file, write_file, edit_file, delete_file, list_dir and search.
//
// Every path goes through workspace.Resolve, which refuses anything outside
// the workspace, and every file operation then goes through an os.Root, so a
// symlink swapped in between the check and the operation cannot lead out
// either. Tools that modify files snapshot them first (for the session diff)
// and report each change through the workspace, which also tells the loop.
package fs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"
	"syscall"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Tools returns every file tool for ws, in a stable order.
func Tools(ws *workspace.Workspace) []tool.Tool {
	return []tool.Tool{
		ReadFile(ws),
		ListDir(ws),
		Search(ws),
		WriteFile(ws),
		EditFile(ws),
		DeleteFile(ws),
	}
}

// fsTool is a tool that declares its effect and idempotency.
type fsTool struct {
	spec       model.ToolSpec
	effect     tool.Effect
	idempotent bool
	run        func(ctx context.Context, args json.RawMessage) (tool.Result, error)
}

func (t *fsTool) Spec() model.ToolSpec { return t.spec }
func (t *fsTool) Effect() tool.Effect  { return t.effect }
func (t *fsTool) Idempotent() bool     { return t.idempotent }
func (t *fsTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	return t.run(ctx, args)
}

// decode unmarshals the arguments of the named tool.
func decode[T any](name string, args json.RawMessage) (T, error) {
	var v T
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(args, &v); err != nil {
		return v, fmt.Errorf("%s: arguments do not match the schema: %v; send a JSON object with the documented fields", name, err)
	}
	return v, nil
}

func ok(format string, a ...any) (tool.Result, error) {
	return tool.Result{Output: fmt.Sprintf(format, a...)}, nil
}

// target is a path resolved inside the workspace.
type target struct {
	given string // as the model wrote it
	abs   string // absolute, symlinks resolved
	rel   string // slash path relative to the root, for os.Root and output
}

func resolve(ws *workspace.Workspace, path string) (target, error) {
	abs, err := ws.Resolve(path)
	if err != nil {
		return target{}, err
	}
	return target{given: path, abs: abs, rel: ws.Rel(abs)}, nil
}

// guardWrite refuses modifications of the workspace root itself and of
// anything inside a .git (.hg, .svn) directory: their internals are not for
// hand editing, and a repository's config can make later read-only git
// commands (git_status, git_diff) run arbitrary programs.
func guardWrite(t target) error {
	if t.rel == "." {
		return fmt.Errorf("path %q is the workspace root directory; give the path of a file", t.given)
	}
	for _, c := range strings.Split(t.rel, "/") {
		if workspace.IsVCSDir(c) {
			return fmt.Errorf("path %s is inside a %s directory, which the file tools do not modify; use the version-control command through execute_command instead", t.rel, c)
		}
	}
	return nil
}

// describe turns a file system error on t into a message for the model.
func describe(t target, err error) error {
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return fmt.Errorf("%s does not exist; use list_dir or search to find the right path", t.rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: a parent of this path is a file, not a directory; check the path with list_dir", t.rel)
	case errors.Is(err, iofs.ErrPermission):
		return fmt.Errorf("%s: %w; the agent cannot access this path, so choose another one", t.rel, err)
	}
	return fmt.Errorf("%s: %v", t.rel, err)
}

// countLines counts lines the way editors do: a final line without a
// newline counts, an empty file has none.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
