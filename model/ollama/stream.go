package ollama

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

// chunk is one /api/chat reply object: the whole reply when not streaming,
// one NDJSON line when streaming.
type chunk struct {
	Message struct {
		Content   string `json:"content"`
		Thinking  string `json:"thinking"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
	Done            bool    `json:"done"`
	DoneReason      string  `json:"done_reason"`
	PromptEvalCount int     `json:"prompt_eval_count"`
	EvalCount       int     `json:"eval_count"`
	Error           *string `json:"error"`
}

// firstChunk also reads the model name, which every line repeats; only the
// first line is decoded with it, saving an allocation per line.
type firstChunk struct {
	Model string `json:"model"`
	chunk
}

type reply struct {
	text, thinking strings.Builder
	calls          []model.ToolCall
	model          string
}

func (c *Client) add(r *transport.Reply, a *reply, ch *chunk) {
	m := &ch.Message
	if m.Thinking != "" {
		a.thinking.WriteString(m.Thinking)
		r.Emit(model.Delta{Reasoning: m.Thinking})
	}
	if m.Content != "" {
		a.text.WriteString(m.Content)
		r.Emit(model.Delta{Text: m.Content})
	}
	// Ollama sends each tool call whole, arguments as an object.
	for _, tc := range m.ToolCalls {
		id := tc.ID
		if id == "" {
			id = c.cfg.NewID()
		}
		args := transport.Arguments(tc.Function.Arguments)
		r.Emit(model.Delta{ToolCallIndex: len(a.calls), ToolName: tc.Function.Name, ArgumentsFragment: string(args)})
		a.calls = append(a.calls, model.ToolCall{ID: id, Name: tc.Function.Name, Arguments: args})
	}
}

func (c *Client) finish(r *transport.Reply, a *reply, last *chunk) (*model.Response, error) {
	resp := &model.Response{
		Text:      a.text.String(),
		ToolCalls: a.calls,
		Model:     a.model,
		Usage:     model.Usage{InputTokens: last.PromptEvalCount, OutputTokens: last.EvalCount},
	}
	if a.thinking.Len() > 0 {
		resp.Reasoning = []model.ReasoningBlock{{Type: "thinking", Text: a.thinking.String()}}
	}
	for i, tc := range resp.ToolCalls {
		if tc.Name == "" {
			return nil, r.Malformed("tool call %d has no function name", i)
		}
	}
	// done_reason is "stop" even after tool calls.
	switch {
	case len(resp.ToolCalls) > 0:
		resp.FinishReason = model.FinishToolCalls
	case last.DoneReason == "length":
		resp.FinishReason = model.FinishLength
	default:
		resp.FinishReason = model.FinishStop
	}
	return resp, nil
}

// parseJSON reads a "stream": false reply.
func (c *Client) parseJSON(r *transport.Reply) (*model.Response, error) {
	buf, err := transport.ReadBody(r.Body)
	if err != nil {
		return nil, err
	}
	defer transport.PutBuffer(buf)
	var ch firstChunk
	if err := json.Unmarshal(buf.Bytes(), &ch); err != nil {
		return nil, r.Malformed("%s (%v)", transport.DescribeBody(r.MediaType, buf.Bytes()), transport.JSONErr(err))
	}
	if ch.Error != nil {
		return nil, replyError(r, *ch.Error)
	}
	if !ch.Done {
		return nil, r.Malformed(`the reply is not marked "done": %q`, transport.Excerpt(buf.Bytes(), 120))
	}
	a := reply{model: ch.Model}
	c.add(r, &a, &ch.chunk)
	return c.finish(r, &a, &ch.chunk)
}

// parseStream reads NDJSON lines up to the one with "done": true.
func (c *Client) parseStream(r *transport.Reply) (*model.Response, error) {
	lines := transport.NewLineReader(r.Body)
	var a reply
	for n := 1; ; n++ {
		line, err := lines.Line()
		if err == io.EOF {
			return nil, r.Malformed(`the stream ended after %d lines without a "done": true line%s`, n-1, pending(&a))
		}
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			n--
			continue
		}
		var ch firstChunk
		if a.model == "" {
			err = json.Unmarshal(line, &ch)
			a.model = ch.Model
		} else {
			err = json.Unmarshal(line, &ch.chunk)
		}
		if err != nil {
			return nil, r.Malformed("line %d is not valid JSON (%v): %q", n, transport.JSONErr(err), transport.Excerpt(line, 120))
		}
		if ch.Error != nil {
			return nil, replyError(r, *ch.Error)
		}
		c.add(r, &a, &ch.chunk)
		if ch.Done {
			return c.finish(r, &a, &ch.chunk)
		}
	}
}

func pending(a *reply) string {
	switch n := len(a.calls); n {
	case 0:
	case 1:
		return " (after 1 tool call)"
	default:
		return fmt.Sprintf(" (after %d tool calls)", n)
	}
	return ""
}

// replyError is an {"error": "..."} object in place of a reply.
func replyError(r *transport.Reply, msg string) error {
	return fmt.Errorf("ollama: error in the reply from %s (model %s): %s", r.URL, r.Model, msg)
}
