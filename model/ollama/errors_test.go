package ollama

import (
	"strings"
	"testing"
)

// Only Ollama's own "model not found" suggests pulling; a 404 from another
// kind of server asks whether --base-url points at Ollama.
func TestStatusHint404(t *testing.T) {
	tests := []struct{ msg, want string }{
		{`model "qwen3:8b" not found, try pulling it first`, "ollama pull qwen3:8b"},
		{`the body is not a JSON error (text/plain): "404 page not found"`, "is --base-url an Ollama server"},
		{`Not Found`, "is --base-url an Ollama server"},
	}
	for _, tt := range tests {
		if got := statusHint(404, tt.msg, "qwen3:8b"); !strings.Contains(got, tt.want) {
			t.Errorf("%q: hint %q, want it to mention %q", tt.msg, got, tt.want)
		}
	}
}
