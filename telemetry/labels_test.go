package telemetry

import (
	"fmt"
	"testing"
)

// However many model names sessions make up, metrics see a bounded set;
// priced models keep their names even after the unknown ones ran out.
func TestModelLabelsStayBounded(t *testing.T) {
	seen := map[string]bool{}
	for i := range 500 {
		seen[modelLabel("openai", fmt.Sprintf("made-up-%d", i))] = true
	}
	if len(seen) > maxUnknownModels+1 || !seen["other"] {
		t.Fatalf("%d labels for 500 made-up names: %v", len(seen), seen)
	}
	if got := modelLabel("openai", "gpt-4.1-mini"); got != "gpt-4.1-mini" {
		t.Fatalf("a priced model after the cap: %q", got)
	}
	if got := modelLabel("scripted", "any-file.json"); got != "scripted" {
		t.Fatalf("a script: %q", got)
	}
}
