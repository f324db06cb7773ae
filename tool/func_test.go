package tool_test

import (
	"testing"

	"github.com/agentloop/agentloop/tool"
)

func TestFuncMarkIdempotent(t *testing.T) {
	if tool.IsIdempotent(mk("plain", `{"type":"object"}`, nil)) {
		t.Fatal("a Func without the option is idempotent")
	}
	marked := tool.Func(mk("marked", `{"type":"object"}`, nil).Spec(), nil, tool.MarkIdempotent())
	if !tool.IsIdempotent(marked) {
		t.Fatal("a Func marked idempotent is not")
	}
	if _, err := tool.NewRegistry(marked); err != nil {
		t.Fatal(err)
	}
}
