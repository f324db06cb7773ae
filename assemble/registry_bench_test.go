package assemble

import (
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// BenchmarkBuiltinRegistry is what building a session's built-in tools
// costs: every session does it, and a workflow worker for every step.
func BenchmarkBuiltinRegistry(b *testing.B) {
	ws, err := workspace.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.NewRegistry(BuiltinSandboxed(ws, nil)...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve is a session's whole environment: model client,
// workspace, tools, system prompt.
func BenchmarkResolve(b *testing.B) {
	r := &Resolver{}
	spec := &loop.SessionStarted{Task: "t", Model: "openai/gpt-4o-mini", Workspace: b.TempDir()}
	st := &loop.State{}
	b.ReportAllocs()
	for b.Loop() {
		env, err := r.Resolve(b.Context(), spec, st)
		if err != nil {
			b.Fatal(err)
		}
		env.Close()
	}
}
