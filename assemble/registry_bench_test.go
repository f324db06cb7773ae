package assemble

import (
	"testing"

	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

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
