package tokens

import (
	"bytes"
	"encoding/json"

	"github.com/agentloop/agentloop/model"
)

// Chat formatting overhead, after OpenAI's cookbook ("How to count tokens
// with tiktoken") for gpt-3.5-turbo/gpt-4 and later: every message is
// wrapped as <|start|>{role}<|message|>{content}<|end|>, and every reply is
// primed with <|start|>assistant<|message|>. The tool figures are estimates:
// OpenAI renders tool schemas into a hidden TypeScript-like namespace whose
// exact size it does not publish.
const (
	perMessage  = 3 // <|start|>, role, <|message|>/<|end|>
	perReply    = 3 // the primed assistant reply
	perToolCall = 3 // call wrapper around name and arguments
	perTool     = 8 // "type": "function", name/description/parameters framing
	perToolList = 12
)

// CountMessages estimates the prompt tokens of a conversation and its tool
// schemas, as a Chat Completions API would count them.
func CountMessages(enc Encoding, msgs []model.Message, tools []model.ToolSpec) int {
	n := perReply
	for _, m := range msgs {
		n += perMessage + Count(enc, string(m.Role)) + Count(enc, m.Content)
		n += countCalls(enc, m.ToolCalls)
		n += countReasoning(enc, m.Reasoning)
		if m.ToolCallID != "" {
			n += Count(enc, m.ToolCallID)
		}
	}
	if len(tools) > 0 {
		n += perToolList
		for _, t := range tools {
			n += perTool + Count(enc, t.Name) + Count(enc, t.Description) + Count(enc, compact(t.Parameters))
		}
	}
	return n
}

// Estimate computes usage for a provider that reported none: the request's
// conversation and tools as input, the reply's text, tool calls and
// reasoning as output. The encoding follows resp.Model, else req.Model.
// Either argument may be nil.
func Estimate(req *model.Request, resp *model.Response) model.Usage {
	name := ""
	if req != nil {
		name = req.Model
	}
	if resp != nil && resp.Model != "" {
		name = resp.Model
	}
	enc := ForModel(name)
	var u model.Usage
	if req != nil {
		u.InputTokens = CountMessages(enc, req.Messages, req.Tools)
	}
	if resp != nil {
		u.OutputTokens = Count(enc, resp.Text) + countCalls(enc, resp.ToolCalls) + countReasoning(enc, resp.Reasoning)
	}
	return u
}

func countCalls(enc Encoding, calls []model.ToolCall) int {
	n := 0
	for _, c := range calls {
		n += perToolCall + Count(enc, c.Name) + Count(enc, compact(c.Arguments))
	}
	return n
}

func countReasoning(enc Encoding, blocks []model.ReasoningBlock) int {
	n := 0
	for _, b := range blocks {
		n += Count(enc, b.Text)
	}
	return n
}

// compact removes insignificant whitespace from JSON so indentation in a
// schema or arguments does not inflate the count. Invalid JSON is counted
// as it is.
func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
