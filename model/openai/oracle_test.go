package openai

// The implementation this package had before its request encoder and reply
// decoder were rewritten for speed, kept as an oracle: the tests in
// equivalence_test.go check the new code produces the same bytes, replies,
// deltas and errors.

import (
	"encoding/json"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

type refChatRequest struct {
	Model               string            `json:"model"`
	Messages            []refWireMessage  `json:"messages"`
	Tools               []refWireTool     `json:"tools,omitempty"`
	MaxTokens           int               `json:"max_tokens,omitempty"`
	MaxCompletionTokens int               `json:"max_completion_tokens,omitempty"`
	Temperature         *float64          `json:"temperature,omitempty"`
	Stream              bool              `json:"stream,omitempty"`
	StreamOptions       *refStreamOptions `json:"stream_options,omitempty"`
}

type refStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type refWireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type refWireTool struct {
	Type     string          `json:"type"`
	Function refWireToolSpec `json:"function"`
}

type refWireToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

func (c *Client) refBuildRequest(name string, req *model.Request, stream bool) *refChatRequest {
	out := &refChatRequest{
		Model:       name,
		Messages:    make([]refWireMessage, 0, len(req.Messages)),
		Temperature: req.Temperature,
	}
	if req.MaxTokens > 0 {
		if c.cfg.MaxTokensField == "max_completion_tokens" {
			out.MaxCompletionTokens = req.MaxTokens
		} else {
			out.MaxTokens = req.MaxTokens
		}
	}
	if stream {
		out.Stream = true
		out.StreamOptions = &refStreamOptions{IncludeUsage: true}
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		wm := refWireMessage{Role: string(m.Role), Content: &m.Content}
		switch m.Role {
		case model.RoleAssistant:
			if len(m.ToolCalls) > 0 {
				if m.Content == "" {
					wm.Content = nil
				}
				wm.ToolCalls = make([]wireToolCall, len(m.ToolCalls))
				for j, tc := range m.ToolCalls {
					args := string(tc.Arguments)
					if args == "" {
						args = "{}"
					}
					wm.ToolCalls[j] = wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: args}}
				}
			}
		case model.RoleTool:
			wm.ToolCallID = m.ToolCallID
		}
		out.Messages = append(out.Messages, wm)
	}
	if len(req.Tools) > 0 {
		out.Tools = make([]refWireTool, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				params = emptySchema
			}
			out.Tools[i] = refWireTool{Type: "function", Function: refWireToolSpec{Name: t.Name, Description: t.Description, Parameters: params}}
		}
	}
	return out
}

// refEncode is how the request body used to be made.
func (c *Client) refEncode(name string, req *model.Request, stream bool) ([]byte, error) {
	return transport.AppendJSON(nil, c.refBuildRequest(name, req, stream))
}
