package assemble

import (
	"fmt"

	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/git"
	"github.com/agentloop/agentloop/tool/session"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Builtin is every built-in tool in a workspace: files, commands, git, and
// the session's own plan, memory, questions and final answer.
func Builtin(ws *workspace.Workspace) []tool.Tool { return BuiltinSandboxed(ws, nil) }

// BuiltinSandboxed is Builtin with commands and git run under policy (nil:
// unconfined). File tools stay in this process with their own workspace
// checks; the sandbox is the second wall.
func BuiltinSandboxed(ws *workspace.Workspace, policy *sandbox.Policy) []tool.Tool {
	out := fs.Tools(ws)
	out = append(out, shell.New(ws, shell.Config{Sandbox: policy}))
	out = append(out, git.Sandboxed(ws, policy)...)
	return append(out, session.Tools()...)
}

// workspaceOf opens the recorded workspace, or returns nil for none.
func workspaceOf(dir string) (*workspace.Workspace, error) {
	if dir == "" {
		return nil, nil
	}
	ws, err := workspace.New(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	return ws, nil
}

// only keeps the named tools, in the order of names.
func only(tools []tool.Tool, names []string) []tool.Tool {
	by := map[string]tool.Tool{}
	for _, t := range tools {
		by[t.Spec().Name] = t
	}
	var out []tool.Tool
	for _, n := range names {
		if t, ok := by[n]; ok {
			out = append(out, t)
		}
	}
	return out
}

func without(tools []tool.Tool, name string) []tool.Tool {
	out := tools[:0:0]
	for _, t := range tools {
		if t.Spec().Name != name {
			out = append(out, t)
		}
	}
	return out
}
