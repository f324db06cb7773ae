package assemble

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
)

// A request's answer schema becomes the task's, once it is checked: a
// schema that is not one, too big, or refers to other documents is
// refused as invalid.
func TestStartAnswerSchema(t *testing.T) {
	d := StartDefaults{Model: "openai/a"}
	schema := `{"type":"object","required":["ok"]}`
	task, err := d.Task(api.StartRequest{Task: "t", AnswerSchema: json.RawMessage(schema)}, false)
	if err != nil || string(task.AnswerSchema) != schema {
		t.Fatalf("answer schema %s, %v", task.AnswerSchema, err)
	}
	if task, err := d.Task(api.StartRequest{Task: "t", AnswerSchema: json.RawMessage("null")}, false); err != nil || task.AnswerSchema != nil {
		t.Errorf("null: %s, %v", task.AnswerSchema, err)
	}
	for name, bad := range map[string]string{
		"array":   `[1]`,
		"keyword": `{"type":"integr"}`,
		"ref":     `{"$ref":"https://example.com/s.json"}`,
		"size":    `{"description":"` + strings.Repeat("x", loop.MaxAnswerSchemaBytes) + `"}`,
	} {
		_, err := d.Task(api.StartRequest{Task: "t", AnswerSchema: json.RawMessage(bad)}, false)
		if !errors.Is(err, service.ErrInvalid) || !strings.Contains(err.Error(), "answer schema") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// max_output_tokens comes from the request, else the profile, else is
// left to the provider; it cannot be negative.
func TestStartMaxOutputTokens(t *testing.T) {
	n := 2048
	d := StartDefaults{Model: "openai/a", Profiles: func(string) (config.Profile, error) {
		return config.Profile{LimitSettings: config.LimitSettings{MaxOutputTokens: &n}}, nil
	}}
	for _, c := range []struct {
		req  api.StartRequest
		want int
	}{
		{api.StartRequest{Task: "t"}, 0},
		{api.StartRequest{Task: "t", MaxOutputTokens: 300}, 300},
		{api.StartRequest{Task: "t", Profile: "p"}, 2048},
		{api.StartRequest{Task: "t", Profile: "p", MaxOutputTokens: 300}, 300},
	} {
		task, err := d.Task(c.req, false)
		if err != nil || task.Limits.MaxOutputTokens != c.want {
			t.Errorf("%+v: max output tokens %d, %v; want %d", c.req, task.Limits.MaxOutputTokens, err, c.want)
		}
	}
	if _, err := d.Task(api.StartRequest{Task: "t", MaxOutputTokens: -1}, false); !errors.Is(err, service.ErrInvalid) {
		t.Errorf("negative: %v", err)
	}
}
