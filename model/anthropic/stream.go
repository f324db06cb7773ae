package anthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

type wireUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// merge takes the non-zero counts of v: message_delta repeats the
// cumulative counts that changed.
func (u *wireUsage) merge(v *wireUsage) {
	if v == nil {
		return
	}
	if v.InputTokens > 0 {
		u.InputTokens = v.InputTokens
	}
	if v.OutputTokens > 0 {
		u.OutputTokens = v.OutputTokens
	}
	if v.CacheCreationInputTokens > 0 {
		u.CacheCreationInputTokens = v.CacheCreationInputTokens
	}
	if v.CacheReadInputTokens > 0 {
		u.CacheReadInputTokens = v.CacheReadInputTokens
	}
}

// usage counts cached prompt tokens in InputTokens too, as OpenAI does, so
// Usage.Total means the same for every provider.
func (u *wireUsage) usage() model.Usage {
	return model.Usage{
		InputTokens:      u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens,
	}
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type message struct {
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      *wireUsage     `json:"usage"`
}

type event struct {
	Type         string        `json:"type"`
	Message      *message      `json:"message"`
	Index        int           `json:"index"`
	ContentBlock *contentBlock `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
	Error *apiError  `json:"error"`
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// block accumulates one content block.
type block struct {
	typ       string
	text      strings.Builder // text or thinking
	signature string
	data      string
	id, name  string
	input     []byte
	call      int // ordinal among tool calls, for deltas
	stopped   bool
}

type reply struct {
	blocks []*block
	calls  int
	usage  wireUsage
	model  string
	stop   string
}

func (a *reply) block(r *transport.Reply, i int) (*block, error) {
	if i < 0 || i >= len(a.blocks) || a.blocks[i] == nil {
		return nil, r.Malformed("delta for content block %d, which was never started", i)
	}
	return a.blocks[i], nil
}

func (a *reply) start(r *transport.Reply, i int, cb *contentBlock) error {
	if i < 0 || i > 4096 {
		return r.Malformed("content block index %d out of range", i)
	}
	for len(a.blocks) <= i {
		a.blocks = append(a.blocks, nil)
	}
	b := &block{typ: cb.Type, signature: cb.Signature, data: cb.Data, id: cb.ID, name: cb.Name}
	switch cb.Type {
	case "text":
		b.text.WriteString(cb.Text)
		if cb.Text != "" {
			r.Emit(model.Delta{Text: cb.Text})
		}
	case "thinking":
		b.text.WriteString(cb.Thinking)
	case "tool_use":
		b.call = a.calls
		a.calls++
		if len(cb.Input) > 0 && string(cb.Input) != "{}" {
			b.input = append(b.input, cb.Input...)
		}
		r.Emit(model.Delta{ToolCallIndex: b.call, ToolName: cb.Name})
	}
	a.blocks[i] = b
	return nil
}

func (a *reply) build(r *transport.Reply) (*model.Response, error) {
	resp := &model.Response{Model: a.model, Usage: a.usage.usage()}
	var text strings.Builder
	for i, b := range a.blocks {
		if b == nil {
			continue
		}
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "thinking":
			resp.Reasoning = append(resp.Reasoning, model.ReasoningBlock{Type: "thinking", Text: b.text.String(), Signature: b.signature})
		case "redacted_thinking":
			resp.Reasoning = append(resp.Reasoning, model.ReasoningBlock{Type: "redacted_thinking", Data: b.data})
		case "tool_use":
			if b.name == "" || b.id == "" {
				return nil, r.Malformed("tool_use block %d has no name or id", i)
			}
			resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: b.id, Name: b.name, Arguments: transport.Arguments(b.input)})
		}
	}
	resp.Text = text.String()
	resp.FinishReason = stopReason(a.stop, len(resp.ToolCalls) > 0)
	return resp, nil
}

func stopReason(s string, hasCalls bool) string {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return model.FinishLength
	case "refusal":
		return model.FinishFiltered
	case "tool_use":
		return model.FinishToolCalls
	}
	if hasCalls {
		return model.FinishToolCalls
	}
	return model.FinishStop
}

// parseStream reads the event stream to its message_stop.
func parseStream(r *transport.Reply) (*model.Response, error) {
	sse := transport.NewSSEReader(r.Body)
	var a reply
	for {
		_, data, err := sse.Next()
		if err == io.EOF {
			return nil, r.Malformed("%s", truncated(&a, sse.Events))
		}
		if err != nil {
			return nil, err
		}
		if len(data) == 0 {
			continue
		}
		var ev event
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, r.Malformed("event %d is not valid JSON (%v): %q", sse.Events, transport.JSONErr(err), transport.Excerpt(data, 120))
		}
		switch ev.Type {
		case "message_start":
			if ev.Message != nil {
				a.model = ev.Message.Model
				a.usage.merge(ev.Message.Usage)
			}
		case "content_block_start":
			if ev.ContentBlock == nil {
				return nil, r.Malformed("content_block_start %d without a content_block", ev.Index)
			}
			if err := a.start(r, ev.Index, ev.ContentBlock); err != nil {
				return nil, err
			}
		case "content_block_delta":
			b, err := a.block(r, ev.Index)
			if err != nil {
				return nil, err
			}
			switch d := &ev.Delta; d.Type {
			case "text_delta":
				b.text.WriteString(d.Text)
				r.Emit(model.Delta{Text: d.Text})
			case "thinking_delta":
				b.text.WriteString(d.Thinking)
				r.Emit(model.Delta{Reasoning: d.Thinking})
			case "signature_delta":
				b.signature += d.Signature
			case "input_json_delta":
				b.input = append(b.input, d.PartialJSON...)
				if d.PartialJSON != "" {
					r.Emit(model.Delta{ToolCallIndex: b.call, ArgumentsFragment: d.PartialJSON})
				}
			case "":
				return nil, r.Malformed("content_block_delta %d without a delta type", ev.Index)
			}
		case "content_block_stop":
			b, err := a.block(r, ev.Index)
			if err != nil {
				return nil, err
			}
			b.stopped = true
		case "message_delta":
			if ev.Delta.StopReason != "" {
				a.stop = ev.Delta.StopReason
			}
			a.usage.merge(ev.Usage)
		case "message_stop":
			return a.build(r)
		case "error":
			return nil, streamError(r, ev.Error)
		}
		// "ping" and event types added later are ignored, as the API's
		// versioning policy asks.
	}
}

// truncated says how a stream that ended without message_stop was cut.
func truncated(a *reply, events int) string {
	s := fmt.Sprintf("the stream ended after %d events without message_stop", events)
	for _, b := range a.blocks {
		if b != nil && b.typ == "tool_use" && !b.stopped {
			return s + fmt.Sprintf("; it stopped in the middle of the input of tool call %d (%s): %q", b.call, b.name, transport.Excerpt(b.input, 80))
		}
	}
	return s
}

// parseJSON reads a whole (non-streaming) message.
func parseJSON(r *transport.Reply) (*model.Response, error) {
	buf, err := transport.ReadBody(r.Body)
	if err != nil {
		return nil, err
	}
	defer transport.PutBuffer(buf)
	var m struct {
		message
		Type  string    `json:"type"`
		Error *apiError `json:"error"`
	}
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		return nil, r.Malformed("%s (%v)", transport.DescribeBody(r.MediaType, buf.Bytes()), transport.JSONErr(err))
	}
	if m.Type == "error" {
		return nil, streamError(r, m.Error)
	}
	if m.Type != "message" {
		return nil, r.Malformed("expected a message object, got type %q: %q", m.Type, transport.Excerpt(buf.Bytes(), 120))
	}
	a := reply{model: m.Model, stop: m.StopReason}
	a.usage.merge(m.Usage)
	for i := range m.Content {
		cb := &m.Content[i]
		if err := a.start(r, i, cb); err != nil {
			return nil, err
		}
		b := a.blocks[i]
		if cb.Type == "thinking" && cb.Thinking != "" {
			r.Emit(model.Delta{Reasoning: cb.Thinking})
		}
		if cb.Type == "tool_use" && len(b.input) > 0 {
			r.Emit(model.Delta{ToolCallIndex: b.call, ArgumentsFragment: string(b.input)})
		}
	}
	return a.build(r)
}
