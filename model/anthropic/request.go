package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentloop/agentloop/model"
)

type messagesRequest struct {
	Model       string        `json:"model"`
	MaxTokens   int           `json:"max_tokens"`
	System      string        `json:"system,omitempty"`
	Messages    []wireMessage `json:"messages"`
	Tools       []wireTool    `json:"tools,omitempty"`
	Temperature *float64      `json:"temperature,omitempty"`
	Thinking    *thinking     `json:"thinking,omitempty"`
	ToolChoice  *toolChoice   `json:"tool_choice,omitempty"`
	Stream      bool          `json:"stream,omitempty"`
}

// toolChoice is Anthropic's tool_choice: auto, any (some tool), none, or
// tool (the named one).
type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// wireToolChoice maps a Request's tool choice to Anthropic's.
func wireToolChoice(c string) *toolChoice {
	switch c {
	case "":
		return nil
	case model.ToolChoiceAuto:
		return &toolChoice{Type: "auto"}
	case model.ToolChoiceRequired:
		return &toolChoice{Type: "any"}
	case model.ToolChoiceNone:
		return &toolChoice{Type: "none"}
	}
	return &toolChoice{Type: "tool", Name: c}
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type wireMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type textBlock struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

type thinkingBlock struct {
	Type      string `json:"type"` // "thinking"
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type redactedBlock struct {
	Type string `json:"type"` // "redacted_thinking"
	Data string `json:"data"`
}

type toolUseBlock struct {
	Type  string          `json:"type"` // "tool_use"
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type toolResultBlock struct {
	Type      string `json:"type"` // "tool_result"
	ToolUseID string `json:"tool_use_id"`
	// Content is the result's text, or a list of text and image blocks
	// when the result carries images.
	Content any  `json:"content,omitempty"`
	IsError bool `json:"is_error,omitempty"`
}

// imageBlock is a picture sent inline: {"type":"image","source":
// {"type":"base64","media_type":"image/png","data":"…"}}.
type imageBlock struct {
	Type   string      `json:"type"` // "image"
	Source imageSource `json:"source"`
}

type imageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"` // base64 in JSON
}

func imageBlocks(images []model.Image) []any {
	out := make([]any, len(images))
	for i, img := range images {
		out[i] = imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: img.MIMEType, Data: img.Data}}
	}
	return out
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

var (
	emptyObject = json.RawMessage(`{}`)
	emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)
)

// buildRequest maps the conversation onto the Messages API: system
// messages become the top-level system prompt, tool results become
// tool_result blocks in a user turn (consecutive results, and the user text
// after them, merged into one turn), and thinking blocks go back first in
// their assistant turn with their signatures.
func (c *Client) buildRequest(name string, req *model.Request, stream bool) *messagesRequest {
	out := &messagesRequest{
		Model:     name,
		MaxTokens: req.MaxTokens,
		Messages:  make([]wireMessage, 0, len(req.Messages)),
		Stream:    stream,
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = c.cfg.MaxTokens
	}
	if len(req.Tools) > 0 {
		out.ToolChoice = wireToolChoice(req.ToolChoice)
	}
	if c.cfg.ThinkingBudget > 0 {
		out.Thinking = &thinking{Type: "enabled", BudgetTokens: c.cfg.ThinkingBudget}
		if out.MaxTokens <= c.cfg.ThinkingBudget {
			out.MaxTokens = c.cfg.ThinkingBudget + c.cfg.MaxTokens
		}
	} else {
		// The API refuses a temperature together with thinking.
		out.Temperature = req.Temperature
	}
	var system []string
	add := func(role string, blocks ...any) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			return
		}
		out.Messages = append(out.Messages, wireMessage{Role: role, Content: blocks})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case model.RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
		case model.RoleUser:
			if strings.TrimSpace(m.Content) != "" {
				add("user", textBlock{Type: "text", Text: m.Content})
			}
			add("user", imageBlocks(m.Images)...)
		case model.RoleTool:
			block := toolResultBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content, IsError: m.IsError}
			if len(m.Images) > 0 {
				var content []any
				if m.Content != "" {
					content = append(content, textBlock{Type: "text", Text: m.Content})
				}
				block.Content = append(content, imageBlocks(m.Images)...)
			} else if m.Content == "" {
				block.Content = nil // omitted, as before
			}
			add("user", block)
		case model.RoleAssistant:
			blocks := make([]any, 0, len(m.Reasoning)+1+len(m.ToolCalls))
			for _, r := range m.Reasoning {
				switch r.Type {
				case "redacted_thinking":
					blocks = append(blocks, redactedBlock{Type: r.Type, Data: r.Data})
				case "thinking":
					if r.Signature != "" {
						blocks = append(blocks, thinkingBlock{Type: r.Type, Thinking: r.Text, Signature: r.Signature})
					}
				}
			}
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, textBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				input := tc.Arguments
				if t := bytes.TrimSpace(input); len(t) == 0 || t[0] != '{' {
					input = emptyObject // the API takes only an object
				}
				blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
			}
			add("assistant", blocks...)
		}
	}
	out.System = strings.Join(system, "\n\n")
	if len(req.Tools) > 0 {
		out.Tools = make([]wireTool, len(req.Tools))
		for i, t := range req.Tools {
			schema := t.Parameters
			if len(schema) == 0 {
				schema = emptySchema
			}
			out.Tools[i] = wireTool{Name: t.Name, Description: t.Description, InputSchema: schema}
		}
	}
	return out
}
