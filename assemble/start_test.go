package assemble

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/loop"
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

// A front end with its own settings (the CLI: a profile, --num-ctx, its
// limits) passes them as defaults; the request's own values go on top,
// and a server's standard defaults are unchanged.
func TestStartDefaultsOfALocalFrontEnd(t *testing.T) {
	off := false
	base := loop.Limits{MaxIterations: 7, Timeout: loop.Duration(time.Hour), BudgetTokens: 900, NoProgressAfter: 2, WrapUp: &off}
	d := StartDefaults{Model: "ollama/qwen3:8b", Endpoint: "http://127.0.0.1:11434", Profile: "local", Approval: "profile",
		Limits: &base, ModelOptions: loop.ModelOptions{NumCtx: 4096}, AllowFiles: true, LocalVerify: true}
	task, err := d.Task(api.StartRequest{Task: "t", Model: "ollama/qwen3:8b", Thinking: "low", BudgetUSD: 2, Verify: []string{"go test ./..."}, Protocol: "p.json"}, true)
	if err != nil {
		t.Fatal(err)
	}
	l := task.Limits
	if l.MaxIterations != 7 || l.Timeout.Std() != time.Hour || l.BudgetTokens != 900 || l.BudgetUSD != 2 || l.NoProgressAfter != 2 || l.WrapUp == nil || *l.WrapUp {
		t.Errorf("limits %+v", *l)
	}
	if l.ContextTokens != 4096 || task.ModelOptions == nil || *task.ModelOptions != (loop.ModelOptions{NumCtx: 4096, Thinking: "low"}) {
		t.Errorf("context %d, options %+v", l.ContextTokens, task.ModelOptions)
	}
	if task.Approval != "profile" || task.Profile != "local" || task.Endpoint != d.Endpoint || len(task.Verify) != 1 || !filepath.IsAbs(task.Protocol) {
		t.Errorf("task %+v", task)
	}
	if base.BudgetUSD != 0 {
		t.Errorf("the defaults' limits were changed: %+v", base)
	}
	// The profile's rules are a default only, and need a profile.
	for _, c := range []struct {
		d   StartDefaults
		req api.StartRequest
	}{
		{d, api.StartRequest{Task: "t", Approval: "profile"}},
		{StartDefaults{Approval: "profile"}, api.StartRequest{Task: "t"}},
	} {
		if _, err := c.d.Task(c.req, true); !errors.Is(err, service.ErrInvalid) {
			t.Errorf("%+v %+v: %v", c.d, c.req, err)
		}
	}
	// A server's defaults: its standard limits, verification only unasked.
	task, err = StartDefaults{}.Task(api.StartRequest{Task: "t", Model: "ollama/qwen3:8b"}, false)
	if err != nil || task.Limits.MaxIterations != loop.DefaultMaxIterations || task.Limits.Timeout.Std() != 30*time.Minute ||
		task.Limits.NoProgressAfter != 5 || task.Limits.ContextTokens == 0 || task.ModelOptions != nil || task.Approval != "ask" {
		t.Errorf("server defaults: %+v %v", task, err)
	}
	if _, err := (StartDefaults{}).Task(api.StartRequest{Task: "t", Verify: []string{"true"}}, true); !errors.Is(err, service.ErrForbidden) {
		t.Errorf("verify under ask on a server: %v", err)
	}
}
