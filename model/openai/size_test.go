package openai

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// The request buffer is sized once from requestSize and held while the
// model works: the guess must cover the encoded request (else the buffer
// is copied as it grows) without much to spare.
func TestRequestSizeCoversTheRequestClosely(t *testing.T) {
	c := New(Config{Model: "m", NewID: func() string { return "id" }})
	short := &model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: "You add numbers."}, {Role: model.RoleUser, Content: "add the numbers"}},
		Tools: []model.ToolSpec{{Name: "add", Description: "Add two numbers.", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)}}}
	for i := range 10 {
		id := fmt.Sprintf("call_%d", i)
		short.Messages = append(short.Messages,
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"a":%d,"b":%d}`, i, 100+i))}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Content: fmt.Sprint(100 + 2*i)})
	}
	thinking := benchRequest()
	thinking.Messages = append(thinking.Messages, model.Message{Role: model.RoleAssistant, Content: "Done.",
		Reasoning: []model.ReasoningBlock{{Type: "thinking", Text: "The tests pass now, so the work is done. Say so."}}})
	for _, tc := range []struct {
		name  string
		req   *model.Request
		slack float64 // how far above the encoded size the guess may be
	}{
		{"short tool calls", short, 1.25},
		{"conversation", benchRequest(), 1.25},
		{"long code outputs", longRequest(), 1.25},
		{"reasoning", thinking, 1.25},
	} {
		body, err := c.appendRequest(nil, "gpt-4.1-mini", tc.req, false)
		if err != nil {
			t.Fatal(err)
		}
		guess := requestSize(tc.req)
		t.Logf("%s: %.2f×", tc.name, float64(guess)/float64(len(body)))
		if guess < len(body) || float64(guess) > tc.slack*float64(len(body)) {
			t.Errorf("%s: guessed %d bytes for a %d-byte request (%.2f×), want 1–%.2f×", tc.name, guess, len(body), float64(guess)/float64(len(body)), tc.slack)
		}
	}
}
