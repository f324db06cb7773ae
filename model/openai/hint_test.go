package openai

import (
	"strings"
	"testing"
)

func TestStatusHintSaysWhichPrefixToUse(t *testing.T) {
	msg := `Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.`
	if got := statusHint("max_tokens")(400, msg, "o4-mini"); !strings.Contains(got, "--model openai/o4-mini") {
		t.Fatalf("sent max_tokens: %q", got)
	}
	if got := statusHint("max_completion_tokens")(400, msg, "m"); !strings.Contains(got, "--model vllm/m") {
		t.Fatalf("sent max_completion_tokens: %q", got)
	}
}

func TestUnreachableHintOnlyForLocalServers(t *testing.T) {
	if h := unreachableHint("http://localhost:8000/v1"); h == nil || !strings.Contains(h("qwen"), "http://localhost:8000/v1 running") {
		t.Fatal("no hint for a local server")
	}
	if h := unreachableHint("https://api.openai.com/v1"); h != nil {
		t.Fatal("a hint for a hosted API")
	}
}
