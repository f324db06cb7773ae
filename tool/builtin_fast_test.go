package tool_test

import (
	"testing"

	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/git"
	"github.com/agentloop/agentloop/tool/session"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Every built-in tool's schema stays inside the zero-allocation fast path:
// a schema that drifts outside it would silently cost the slow validator
// on every call.
func TestBuiltinSchemasUseTheFastPath(t *testing.T) {
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	all := append(fs.Tools(ws), git.Tools(ws)...)
	all = append(all, shell.New(ws, shell.Config{}))
	all = append(all, session.Tools()...) // includes update_plan and the memory tools
	for _, tl := range all {
		if spec := tl.Spec(); tool.CompileFast(spec.Parameters) == nil {
			t.Errorf("%s: schema is outside the fast subset: %s", spec.Name, spec.Parameters)
		}
	}
}
