package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// wireMessage is one message of a --messages file, in the OpenAI Chat
// Completions shape most callers already have.
type wireMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// loadMessages reads a conversation to start a session from. The loop
// checks its shape (roles, tool results matching calls, the last message).
func loadMessages(path string) ([]model.Message, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var wire []wireMessage
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wire); err != nil {
		return nil, fmt.Errorf("not a JSON array of messages ({\"role\": \"user\", \"content\": \"…\"}): %w", err)
	}
	out := make([]model.Message, 0, len(wire))
	for _, w := range wire {
		m := model.Message{Role: model.Role(w.Role), Content: w.Content, ToolCallID: w.ToolCallID, ToolName: w.Name}
		for _, c := range w.ToolCalls {
			args := c.Function.Arguments
			var s string
			if json.Unmarshal(args, &s) == nil {
				args = json.RawMessage(s) // OpenAI sends arguments as a JSON string
			}
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			if !json.Valid(args) {
				return nil, fmt.Errorf("tool call %s: arguments are not JSON: %s", c.ID, args)
			}
			m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
		out = append(out, m)
	}
	return out, nil
}
