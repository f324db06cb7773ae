package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

type chunk struct {
	Choices []chunkChoice   `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// firstChunk also reads the model name, which every chunk repeats; only
// the first is decoded with it, saving an allocation per chunk.
type firstChunk struct {
	Model string `json:"model"`
	chunk
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content          string          `json:"content"`
	ReasoningContent string          `json:"reasoning_content"` // DeepSeek, vLLM, llama.cpp
	Reasoning        string          `json:"reasoning"`         // OpenRouter, Ollama /v1
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	ExtraContent json.RawMessage `json:"extra_content"`
}

type wireUsage struct {
	PromptTokens            int                `json:"prompt_tokens"`
	CompletionTokens        int                `json:"completion_tokens"`
	TotalTokens             int                `json:"total_tokens"`
	PromptTokensDetails     *promptDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails *completionDetails `json:"completion_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type completionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// usage reads a reply's token counts. OpenAI counts reasoning inside
// completion_tokens (and details it); Gemini's OpenAI-compatible API
// leaves hidden thinking out of completion_tokens but in total_tokens:
// the difference is thinking, billed as output, so it is counted as
// output (and reasoning) tokens — budgets and prices see it.
func (u *wireUsage) usage() model.Usage {
	if u == nil {
		return model.Usage{}
	}
	out := model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CacheReadTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	if hidden := u.TotalTokens - u.PromptTokens - u.CompletionTokens; hidden > 0 {
		out.OutputTokens += hidden
		out.ReasoningTokens += hidden
	}
	return out
}

// reply accumulates a reply from stream chunks (or one whole message).
type reply struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []callAcc
	slots     []int // wire index → position in calls, -1 when unseen
	finish    string
	usage     *wireUsage
	model     string
}

// maxCallIndex is the largest tool-call index kept apart; larger (and
// negative) ones share its slot.
const maxCallIndex = 1024

type callAcc struct {
	id, name string
	args     []byte
	extra    json.RawMessage
}

// slot finds the call a tool-call delta belongs to. Calls are keyed by
// index; a new ID at an index already in use (Ollama's /v1 reuses index 0
// for parallel calls) or a delta without an index and with a new ID opens a
// new call.
func (a *reply) slot(d *toolCallDelta) int {
	if d.Index == nil {
		last := len(a.calls) - 1
		if last >= 0 && (d.ID == "" || d.ID == a.calls[last].id) {
			return last
		}
		a.calls = append(a.calls, callAcc{id: d.ID})
		return len(a.calls) - 1
	}
	i := *d.Index
	if i < 0 || i > maxCallIndex {
		i = maxCallIndex
	}
	for len(a.slots) <= i {
		a.slots = append(a.slots, -1)
	}
	if s := a.slots[i]; s >= 0 && (d.ID == "" || a.calls[s].id == "" || a.calls[s].id == d.ID) {
		return s
	}
	a.calls = append(a.calls, callAcc{id: d.ID})
	a.slots[i] = len(a.calls) - 1
	return a.slots[i]
}

func (a *reply) add(r *transport.Reply, ch *chunk) {
	if ch.Usage != nil {
		a.usage = ch.Usage
	}
	for i := range ch.Choices {
		c := &ch.Choices[i]
		if c.Index != 0 {
			continue
		}
		if c.FinishReason != "" {
			a.finish = c.FinishReason
		}
		d := &c.Delta
		if d.Content != "" {
			a.text.WriteString(d.Content)
			r.Emit(model.Delta{Text: d.Content})
		}
		if rs := d.ReasoningContent + d.Reasoning; rs != "" {
			a.reasoning.WriteString(rs)
			r.Emit(model.Delta{Reasoning: rs})
		}
		for j := range d.ToolCalls {
			td := &d.ToolCalls[j]
			s := a.slot(td)
			call := &a.calls[s]
			if call.id == "" {
				call.id = td.ID
			}
			newName := call.name == "" && td.Function.Name != ""
			if newName {
				call.name = td.Function.Name
			}
			call.args = append(call.args, td.Function.Arguments...)
			if len(td.ExtraContent) > 0 && string(td.ExtraContent) != "null" {
				call.extra = append(json.RawMessage(nil), td.ExtraContent...)
			}
			if newName || td.Function.Arguments != "" {
				dl := model.Delta{ToolCallIndex: s, ArgumentsFragment: td.Function.Arguments}
				if newName {
					dl.ToolName = call.name
				}
				r.Emit(dl)
			}
		}
	}
}

func (c *Client) finish(r *transport.Reply, a *reply) (*model.Response, error) {
	resp := &model.Response{Text: a.text.String(), Model: a.model, Usage: a.usage.usage()}
	if a.reasoning.Len() > 0 {
		resp.Reasoning = []model.ReasoningBlock{{Type: "thinking", Text: a.reasoning.String()}}
	}
	for i := range a.calls {
		call := &a.calls[i]
		if call.name == "" {
			return nil, r.Malformed("tool call %d has no function name (arguments %q)", i, transport.Excerpt(call.args, 80))
		}
		id := call.id
		if id == "" {
			id = c.cfg.NewID()
		}
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: id, Name: call.name, Arguments: transport.Arguments(call.args), Extra: call.extra})
	}
	resp.FinishReason = finishReason(a.finish, len(resp.ToolCalls) > 0)
	return resp, nil
}

func finishReason(wire string, hasCalls bool) string {
	switch wire {
	case "length":
		return model.FinishLength
	case "content_filter":
		return model.FinishFiltered
	case "tool_calls", "function_call":
		return model.FinishToolCalls
	}
	// Several servers say "stop" (or nothing) after tool calls.
	if hasCalls {
		return model.FinishToolCalls
	}
	return model.FinishStop
}

var doneMarker = []byte("[DONE]")

// parseStream reads a "text/event-stream" reply to its "data: [DONE]".
func (c *Client) parseStream(r *transport.Reply) (*model.Response, error) {
	sse := transport.GetSSEReader(r.Body)
	defer transport.PutSSEReader(sse)
	dec := transport.GetJSONDecoder()
	defer transport.PutJSONDecoder(dec)
	var a reply
	// ch is decoded into afresh for every event; only the capacity of its
	// choices is kept, cleared.
	var ch firstChunk
	for {
		_, data, err := sse.Next()
		if err == io.EOF {
			return nil, r.Malformed("%s", truncated(&a, sse.Events))
		}
		if err != nil {
			return nil, err
		}
		data = bytes.TrimSpace(data)
		if bytes.Equal(data, doneMarker) {
			return c.finish(r, &a)
		}
		if len(data) == 0 {
			continue
		}
		choices := ch.Choices[:cap(ch.Choices)]
		clear(choices)
		ch = firstChunk{}
		ch.Choices = choices[:0]
		if a.model == "" {
			err = dec.Unmarshal(data, &ch)
			a.model = ch.Model
		} else {
			err = dec.Unmarshal(data, &ch.chunk)
		}
		if err != nil {
			return nil, r.Malformed("event %d is not valid JSON (%v): %q", sse.Events, transport.JSONErr(err), transport.Excerpt(data, 120))
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return nil, streamError(r, ch.Error)
		}
		a.add(r, &ch.chunk)
	}
}

// truncated says how a stream that ended without "[DONE]" was cut.
func truncated(a *reply, events int) string {
	s := fmt.Sprintf("the stream ended after %d events without \"data: [DONE]\"", events)
	for i := range a.calls {
		call := &a.calls[i]
		if len(call.args) > 0 && !json.Valid(call.args) {
			return s + fmt.Sprintf("; it stopped in the middle of the arguments of tool call %d (%s): %q", i, call.name, transport.Excerpt(call.args, 80))
		}
	}
	if a.finish == "" {
		s += " and before any finish_reason"
	}
	return s
}
