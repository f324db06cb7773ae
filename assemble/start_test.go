package assemble

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/service"
)

// A request's fallback models are recorded in order, and may only name
// models the server would accept for model.
func TestStartFallbackModels(t *testing.T) {
	d := StartDefaults{Model: "openai/a"}
	task, err := d.Task(api.StartRequest{Task: "t", FallbackModels: []string{"openai/b", "anthropic/claude-sonnet-4-5"}}, false)
	if err != nil || strings.Join(task.FallbackModels, ",") != "openai/b,anthropic/claude-sonnet-4-5" {
		t.Fatalf("fallback models %q, %v", task.FallbackModels, err)
	}
	// The server's defaults go with its default model only.
	d.FallbackModels = []string{"openai/c"}
	if task, _ := d.Task(api.StartRequest{Task: "t"}, false); strings.Join(task.FallbackModels, ",") != "openai/c" {
		t.Errorf("default fallbacks: %q", task.FallbackModels)
	}
	if task, _ := d.Task(api.StartRequest{Task: "t", Model: "anthropic/claude-sonnet-4-5"}, false); len(task.FallbackModels) != 0 {
		t.Errorf("another model kept the default's fallbacks: %q", task.FallbackModels)
	}
	if task, _ := d.Task(api.StartRequest{Task: "t", FallbackModels: []string{"openai/b"}}, false); strings.Join(task.FallbackModels, ",") != "openai/b" {
		t.Errorf("the request's own fallbacks: %q", task.FallbackModels)
	}
	d.FallbackModels = nil
	for _, c := range []struct {
		models []string
		want   error
	}{
		{[]string{"script:/etc/passwd"}, service.ErrForbidden},
		{[]string{"qwen3:8b"}, service.ErrInvalid},
		{[]string{"openai/"}, service.ErrInvalid},
		{[]string{""}, service.ErrInvalid},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, service.ErrInvalid},
	} {
		_, err := d.Task(api.StartRequest{Task: "t", FallbackModels: c.models}, false)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "fallback_models") {
			t.Errorf("%q: %v, want %v", c.models, err, c.want)
		}
	}
}
