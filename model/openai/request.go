package openai

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/agentloop/agentloop/internal/jsonw"
	"github.com/agentloop/agentloop/model"
)

// wireToolCall is a tool call in a reply.
type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
	// ExtraContent is provider data to send back with the call (Gemini:
	// {"google":{"thought_signature":…}}).
	ExtraContent json.RawMessage `json:"extra_content,omitempty"`
}

type wireFunction struct {
	Name string `json:"name"`
	// Arguments is a JSON document encoded as a string.
	Arguments string `json:"arguments"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// appendRequest appends the Chat Completions request body for req to b,
// written field by field, without intermediate structs:
//
//	{"model":…,"messages":[…],"tools":[…],"max_tokens":…,
//	 "max_completion_tokens":…,"temperature":…,"stream":true,
//	 "stream_options":{"include_usage":true}}
//
// and a newline, exactly as encoding/json (with SetEscapeHTML(false)) would
// encode the equivalent struct; optional fields are left out when empty.
// A message's content is null on an assistant message that only calls
// tools; tool-call arguments are sent as a JSON string ("{}" when empty);
// a tool without parameters gets an empty object schema.
func (c *Client) appendRequest(b []byte, name string, req *model.Request, stream bool) ([]byte, error) {
	var err error
	b = append(b, `{"model":`...)
	b = jsonw.AppendString(b, name, false)
	b = append(b, `,"messages":[`...)
	// Reasoning goes back for the replies since the last user message —
	// the tool loop under way, which thinking models (DeepSeek) need to
	// continue — and not for earlier turns, which they refuse or ignore.
	loopStart := 0
	for i := range req.Messages {
		if req.Messages[i].Role == model.RoleUser {
			loopStart = i
		}
	}
	pictures := -1 // first tool message of the run under way that has images
	for i := range req.Messages {
		m := &req.Messages[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, m, i > loopStart)
		if m.Role == model.RoleTool && len(m.Images) > 0 && pictures < 0 {
			pictures = i
		}
		if pictures >= 0 && (i+1 == len(req.Messages) || req.Messages[i+1].Role != model.RoleTool) {
			b = appendToolImages(b, req.Messages[pictures:i+1])
			pictures = -1
		}
	}
	b = append(b, ']')
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range req.Tools {
			t := &req.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"function","function":{"name":`...)
			b = jsonw.AppendString(b, t.Name, false)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = jsonw.AppendString(b, t.Description, false)
			}
			b = append(b, `,"parameters":`...)
			params := t.Parameters
			if len(params) == 0 {
				params = emptySchema
			}
			if b, err = jsonw.AppendRaw(b, params); err != nil {
				return b, err
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if len(req.Tools) > 0 {
		switch req.ToolChoice {
		case "":
		case model.ToolChoiceAuto, model.ToolChoiceRequired, model.ToolChoiceNone:
			b = append(b, `,"tool_choice":`...)
			b = jsonw.AppendString(b, req.ToolChoice, false)
		default:
			b = append(b, `,"tool_choice":{"type":"function","function":{"name":`...)
			b = jsonw.AppendString(b, req.ToolChoice, false)
			b = append(b, "}}"...)
		}
	}
	if c.cfg.ReasoningEffort != "" {
		b = append(b, `,"reasoning_effort":`...)
		b = jsonw.AppendString(b, c.cfg.ReasoningEffort, false)
	}
	if req.MaxTokens > 0 {
		if c.cfg.MaxTokensField == "max_completion_tokens" {
			b = append(b, `,"max_completion_tokens":`...)
		} else {
			b = append(b, `,"max_tokens":`...)
		}
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	if req.Temperature != nil {
		b = append(b, `,"temperature":`...)
		if b, err = jsonw.AppendFloat(b, *req.Temperature); err != nil {
			return b, err
		}
	}
	if stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(b, "}\n"...), nil
}

func appendMessage(b []byte, m *model.Message, withReasoning bool) []byte {
	b = append(b, `{"role":`...)
	b = jsonw.AppendString(b, string(m.Role), false)
	if withReasoning && m.Role == model.RoleAssistant {
		var text []byte
		for _, r := range m.Reasoning {
			if r.Type == "thinking" {
				text = append(text, r.Text...)
			}
		}
		if len(text) > 0 {
			b = append(b, `,"reasoning_content":`...)
			b = jsonw.AppendString(b, text, false)
		}
	}
	calls := m.Role == model.RoleAssistant && len(m.ToolCalls) > 0
	if calls && m.Content == "" {
		b = append(b, `,"content":null`...)
	} else if m.Role == model.RoleUser && len(m.Images) > 0 {
		b = append(b, `,"content":[`...)
		if m.Content != "" {
			b = appendTextPart(b, m.Content)
			b = append(b, ',')
		}
		b = appendImageParts(b, m.Images)
		b = append(b, ']')
	} else {
		b = append(b, `,"content":`...)
		b = jsonw.AppendString(b, m.Content, false)
	}
	if calls {
		b = append(b, `,"tool_calls":[`...)
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsonw.AppendString(b, tc.ID, false)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsonw.AppendString(b, tc.Name, false)
			b = append(b, `,"arguments":`...)
			if len(tc.Arguments) == 0 {
				b = append(b, `"{}"`...)
			} else {
				b = jsonw.AppendString(b, []byte(tc.Arguments), false)
			}
			b = append(b, '}')
			if len(tc.Extra) > 0 && json.Valid(tc.Extra) {
				b = append(b, `,"extra_content":`...)
				b = append(b, tc.Extra...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.Role == model.RoleTool && m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = jsonw.AppendString(b, m.ToolCallID, false)
	}
	return append(b, '}')
}

// appendToolImages appends, after a run of tool results, one user message
// with the images those results carried: Chat Completions takes images
// only in user messages, and a message between the results of one turn
// would part them from the call that asked for them. Each result's images
// follow a text part naming its call; the results themselves keep their
// text, which describes the images to models that cannot see them.
func appendToolImages(b []byte, run []model.Message) []byte {
	b = append(b, `,{"role":"user","content":[`...)
	first := true
	for i := range run {
		m := &run[i]
		if len(m.Images) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		label := "The images returned by tool call " + m.ToolCallID
		if m.ToolName != "" {
			label += " (" + m.ToolName + ")"
		}
		b = appendTextPart(b, label+":")
		b = append(b, ',')
		b = appendImageParts(b, m.Images)
	}
	return append(b, "]}"...)
}

func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"text","text":`...)
	b = jsonw.AppendString(b, text, false)
	return append(b, '}')
}

// appendImageParts appends image_url parts holding data URLs
// (data:image/png;base64,…), comma-separated.
func appendImageParts(b []byte, images []model.Image) []byte {
	for i, img := range images {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		b = jsonw.AppendString(b, "data:"+img.MIMEType+";base64,"+base64.StdEncoding.EncodeToString(img.Data), false)
		b = append(b, "}}"...)
	}
	return b
}

// requestSize guesses the size of the encoded request from above, closely:
// the buffer is allocated once, and held while the model works on the
// request. Escaping is guessed at one byte in four of text (code has
// newlines, tabs and quotes) and one in two of tool arguments (JSON inside
// a JSON string: every quote escaped).
func requestSize(req *model.Request) int {
	n := 160 // {"model":…,"messages":[…] and the options after them
	for i := range req.Messages {
		m := &req.Messages[i]
		n += 52 + escaped(len(m.Content)) + len(m.ToolCallID)
		for _, img := range m.Images {
			n += 160 + len(m.ToolCallID) + len(m.ToolName) + len(img.MIMEType) + base64.StdEncoding.EncodedLen(len(img.Data))
		}
		for _, r := range m.Reasoning {
			n += 24 + escaped(len(r.Text))
		}
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			n += 80 + len(tc.ID) + len(tc.Name) + len(tc.Arguments) + len(tc.Arguments)/2 + len(tc.Extra)
		}
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		n += 64 + len(t.Name) + escaped(len(t.Description)) + len(t.Parameters)
	}
	return n
}

func escaped(n int) int { return n + n/4 }
