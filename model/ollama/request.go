package ollama

import (
	"bytes"
	"encoding/json"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

type chatRequest struct {
	Model     string        `json:"model"`
	Messages  []wireMessage `json:"messages"`
	Tools     []wireTool    `json:"tools,omitempty"`
	Stream    bool          `json:"stream"`
	Think     *bool         `json:"think,omitempty"`
	KeepAlive string        `json:"keep_alive,omitempty"`
	Options   *wireOptions  `json:"options,omitempty"`
}

type wireOptions struct {
	Temperature *float64 `json:"temperature,omitempty"`
	NumPredict  int      `json:"num_predict,omitempty"`
	NumCtx      int      `json:"num_ctx,omitempty"`
}

type wireMessage struct {
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	Thinking  string         `json:"thinking,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	ToolName  string         `json:"tool_name,omitempty"`
	// Images are the message's pictures, base64 without a data: prefix.
	Images [][]byte `json:"images,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id,omitempty"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name string `json:"name"`
	// Arguments is a JSON object (not a string, unlike OpenAI).
	Arguments json.RawMessage `json:"arguments"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireToolSpec `json:"function"`
}

type wireToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

var (
	emptyObject = json.RawMessage(`{}`)
	emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)
)

func (c *Client) buildRequest(name string, req *model.Request, stream bool) *chatRequest {
	out := &chatRequest{
		Model:     name,
		Messages:  make([]wireMessage, 0, len(req.Messages)),
		Stream:    stream,
		Think:     c.cfg.Think,
		KeepAlive: c.cfg.KeepAlive,
	}
	if req.Temperature != nil || req.MaxTokens > 0 || c.cfg.NumCtx > 0 {
		out.Options = &wireOptions{Temperature: req.Temperature, NumPredict: req.MaxTokens, NumCtx: c.cfg.NumCtx}
	}
	var names map[string]string
	for i := range req.Messages {
		m := &req.Messages[i]
		wm := wireMessage{Role: string(m.Role), Content: m.Content}
		for _, img := range m.Images {
			wm.Images = append(wm.Images, img.Data)
		}
		switch m.Role {
		case model.RoleAssistant:
			for _, r := range m.Reasoning {
				wm.Thinking += r.Text
			}
			if len(m.ToolCalls) > 0 {
				wm.ToolCalls = make([]wireToolCall, len(m.ToolCalls))
				for j, tc := range m.ToolCalls {
					args := tc.Arguments
					if t := bytes.TrimSpace(args); len(t) == 0 || t[0] != '{' {
						// Ollama only takes an object; a call whose arguments
						// were not one already failed and was answered.
						args = emptyObject
					}
					wm.ToolCalls[j] = wireToolCall{Function: wireFunction{Name: tc.Name, Arguments: args}}
				}
			}
		case model.RoleTool:
			wm.ToolName = m.ToolName
			if wm.ToolName == "" {
				if names == nil {
					names = transport.ToolNames(req.Messages)
				}
				wm.ToolName = names[m.ToolCallID]
			}
		}
		out.Messages = append(out.Messages, wm)
	}
	// Ollama has no tool_choice: "none" is honoured by offering no tools;
	// "required" and a named tool cannot be asked for.
	if len(req.Tools) > 0 && req.ToolChoice != model.ToolChoiceNone {
		out.Tools = make([]wireTool, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				params = emptySchema
			}
			out.Tools[i] = wireTool{Type: "function", Function: wireToolSpec{Name: t.Name, Description: t.Description, Parameters: params}}
		}
	}
	return out
}
