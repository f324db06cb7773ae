package openai

// The reply parsing this package had before the rewrite for speed, frozen
// as an oracle for equivalence_test.go (see oracle_test.go).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

type refChunk struct {
	Choices []refChunkChoice `json:"choices"`
	Usage   *refWireUsage    `json:"usage"`
	Error   json.RawMessage  `json:"error"`
}

// refFirstChunk also reads the model name, which every chunk repeats; only
// the first is decoded with it, saving an allocation per chunk.
type refFirstChunk struct {
	Model string `json:"model"`
	refChunk
}

type refChunkChoice struct {
	Index        int           `json:"index"`
	Delta        refChunkDelta `json:"delta"`
	FinishReason string        `json:"finish_reason"`
}

type refChunkDelta struct {
	Content          string             `json:"content"`
	ReasoningContent string             `json:"reasoning_content"` // DeepSeek, vLLM, llama.cpp
	Reasoning        string             `json:"reasoning"`         // OpenRouter, Ollama /v1
	ToolCalls        []refToolCallDelta `json:"tool_calls"`
}

type refToolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type refWireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *refWireUsage) usage() model.Usage {
	if u == nil {
		return model.Usage{}
	}
	out := model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CacheReadTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// refReply accumulates a reply from stream chunks (or one whole message).
type refReply struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []refCallAcc
	slots     []int // wire index → position in calls, -1 when unseen
	finish    string
	usage     *refWireUsage
	model     string
}

type refCallAcc struct {
	id, name string
	args     []byte
}

// slot finds the call a tool-call delta belongs to. Calls are keyed by
// index; a new ID at an index already in use (Ollama's /v1 reuses index 0
// for parallel calls) or a delta without an index and with a new ID opens a
// new call.
func (a *refReply) slot(d *refToolCallDelta) int {
	if d.Index == nil {
		last := len(a.calls) - 1
		if last >= 0 && (d.ID == "" || d.ID == a.calls[last].id) {
			return last
		}
		a.calls = append(a.calls, refCallAcc{id: d.ID})
		return len(a.calls) - 1
	}
	i := *d.Index
	if i < 0 || i > 1024 {
		i = 1024
	}
	for len(a.slots) <= i {
		a.slots = append(a.slots, -1)
	}
	if s := a.slots[i]; s >= 0 && (d.ID == "" || a.calls[s].id == "" || a.calls[s].id == d.ID) {
		return s
	}
	a.calls = append(a.calls, refCallAcc{id: d.ID})
	a.slots[i] = len(a.calls) - 1
	return a.slots[i]
}

func (a *refReply) add(r *transport.Reply, ch *refChunk) {
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

func (c *Client) refFinish(r *transport.Reply, a *refReply) (*model.Response, error) {
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
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: id, Name: call.name, Arguments: transport.Arguments(call.args)})
	}
	resp.FinishReason = refFinishReason(a.finish, len(resp.ToolCalls) > 0)
	return resp, nil
}

func refFinishReason(wire string, hasCalls bool) string {
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

var refDoneMarker = []byte("[DONE]")

// parseStream reads a "text/event-stream" reply to its "data: [DONE]".
func (c *Client) refParseStream(r *transport.Reply) (*model.Response, error) {
	sse := transport.NewSSEReader(r.Body)
	var a refReply
	for {
		_, data, err := sse.Next()
		if err == io.EOF {
			return nil, r.Malformed("%s", refTruncated(&a, sse.Events))
		}
		if err != nil {
			return nil, err
		}
		data = bytes.TrimSpace(data)
		if bytes.Equal(data, refDoneMarker) {
			return c.refFinish(r, &a)
		}
		if len(data) == 0 {
			continue
		}
		var ch refFirstChunk
		if a.model == "" {
			err = json.Unmarshal(data, &ch)
			a.model = ch.Model
		} else {
			err = json.Unmarshal(data, &ch.refChunk)
		}
		if err != nil {
			return nil, r.Malformed("event %d is not valid JSON (%v): %q", sse.Events, refJsonErr(err), transport.Excerpt(data, 120))
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return nil, streamError(r, ch.Error)
		}
		a.add(r, &ch.refChunk)
	}
}

// refTruncated says how a stream that ended without "[DONE]" was cut.
func refTruncated(a *refReply, events int) string {
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

func refJsonErr(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%v at offset %d", se, se.Offset)
	}
	return err
}

// refWholeReply is a non-streaming chat.completion.
type refWholeReply struct {
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content          *string        `json:"content"`
			ReasoningContent string         `json:"reasoning_content"`
			Reasoning        string         `json:"reasoning"`
			Refusal          *string        `json:"refusal"`
			ToolCalls        []wireToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *refWireUsage   `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// parseJSON reads a whole chat.completion (also when a server ignored
// "stream": true, in which case its content is emitted as one delta).
func (c *Client) refParseJSON(r *transport.Reply) (*model.Response, error) {
	buf, err := transport.ReadBody(r.Body)
	if err != nil {
		return nil, err
	}
	defer transport.PutBuffer(buf)
	var w refWholeReply
	if err := json.Unmarshal(buf.Bytes(), &w); err != nil {
		return nil, r.Malformed("%s (%v)", transport.DescribeBody(r.MediaType, buf.Bytes()), refJsonErr(err))
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		return nil, streamError(r, w.Error)
	}
	if len(w.Choices) == 0 {
		return nil, r.Malformed("the reply has no choices: %q", transport.Excerpt(buf.Bytes(), 120))
	}
	var a refReply
	a.model, a.usage, a.finish = w.Model, w.Usage, w.Choices[0].FinishReason
	msg := &w.Choices[0].Message
	ch := refChunk{Choices: []refChunkChoice{{Delta: refChunkDelta{ReasoningContent: msg.ReasoningContent, Reasoning: msg.Reasoning}}}}
	d := &ch.Choices[0].Delta
	if msg.Content != nil {
		d.Content = *msg.Content
	} else if msg.Refusal != nil {
		d.Content = *msg.Refusal
	}
	for i, tc := range msg.ToolCalls {
		td := refToolCallDelta{Index: &i, ID: tc.ID}
		td.Function.Name, td.Function.Arguments = tc.Function.Name, tc.Function.Arguments
		d.ToolCalls = append(d.ToolCalls, td)
	}
	a.add(r, &ch)
	return c.refFinish(r, &a)
}
