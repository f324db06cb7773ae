package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentloop/agentloop/internal/ownstack"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

// statusHint says what to do about an error status. sent is the request
// field the client used for the token limit: a server that wants the other
// one is answered by choosing the provider prefix that sends it.
func statusHint(sent string) func(status int, msg, name string) string {
	return func(status int, msg, name string) string {
		switch {
		case status == http.StatusNotFound && strings.Contains(strings.ToLower(msg), "model"):
			return fmt.Sprintf("check the model name %q and --base-url", name)
		case status == http.StatusBadRequest && strings.Contains(msg, "max_tokens") && strings.Contains(msg, "max_completion_tokens"):
			if sent == "max_tokens" {
				return "this server wants max_completion_tokens: use --model openai/" + name + " with --base-url pointing at it"
			}
			return "this server wants max_tokens: use an OpenAI-compatible prefix such as --model vllm/" + name + " with --base-url pointing at it"
		}
		return ""
	}
}

// unreachableHint answers "connection refused" from a server on this
// machine (vLLM, llama.cpp, LM Studio…): it is probably not running.
func unreachableHint(baseURL string) func(name string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil
	}
	switch u.Hostname() {
	case "localhost", "127.0.0.1", "::1", "0.0.0.0":
	default:
		return nil
	}
	return func(name string) string {
		return fmt.Sprintf("is the server at %s running and serving %s? start it, or point --base-url at it", baseURL, name)
	}
}

// wholeReply is a non-streaming chat.completion.
// Its fields are also read by decodeWhole (whole.go): a field added here
// is added there.
type wholeReply struct {
	Model   string          `json:"model"`
	Choices []wholeChoice   `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wholeChoice struct {
	Index        int          `json:"index"`
	Message      wholeMessage `json:"message"`
	FinishReason string       `json:"finish_reason"`
}

type wholeMessage struct {
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content"`
	Reasoning        string         `json:"reasoning"`
	Refusal          *string        `json:"refusal"`
	ToolCalls        []wireToolCall `json:"tool_calls"`
}

// parseJSON reads a whole chat.completion (also when a server ignored
// "stream": true, in which case its content is emitted as one delta). It
// builds the Response straight from the decoded message; the deltas, their
// order and the errors are those of feeding the message through the
// stream accumulator as one chunk, which is what it does for a reply with
// so many tool calls that the accumulator's index limit comes into play.
func (c *Client) parseJSON(r *transport.Reply) (*model.Response, error) {
	buf, err := transport.ReadBody(r.Body)
	if err != nil {
		return nil, err
	}
	defer transport.PutBuffer(buf)
	var w wholeReply
	if !decodeWhole(buf.Bytes(), &w) {
		if err := unmarshalWhole(buf.Bytes(), &w); err != nil {
			return nil, r.Malformed("%s (%v)", transport.DescribeBody(r.MediaType, buf.Bytes()), transport.JSONErr(err))
		}
	}
	return c.wholeResponse(r, &w, buf.Bytes())
}

// unmarshalWhole decodes what decodeWhole declined, from scratch, with
// encoding/json, which recurses deeply: off the session's stack (see
// internal/ownstack).
func unmarshalWhole(body []byte, w *wholeReply) error {
	*w = wholeReply{}
	return ownstack.Do(func() error {
		dec := transport.GetJSONDecoder()
		defer transport.PutJSONDecoder(dec)
		return dec.Unmarshal(body, w)
	})
}

// wholeResponse builds the Response of a decoded whole reply (body). It is
// apart from parseJSON so that its frame is not on the stack while the
// reply is decoded, the deepest point of a session's stack (see
// transport.Client.newRequest).
//
//go:noinline
func (c *Client) wholeResponse(r *transport.Reply, w *wholeReply, body []byte) (*model.Response, error) {
	if len(w.Error) > 0 && string(w.Error) != "null" {
		return nil, streamError(r, w.Error)
	}
	if len(w.Choices) == 0 {
		return nil, r.Malformed("the reply has no choices: %q", transport.Excerpt(body, 120))
	}
	msg := &w.Choices[0].Message
	if len(msg.ToolCalls) > maxCallIndex+1 {
		return c.accumulateWhole(r, w)
	}
	resp := &model.Response{Model: w.Model, Usage: w.Usage.usage()}
	if msg.Content != nil {
		resp.Text = *msg.Content
	} else if msg.Refusal != nil {
		resp.Text = *msg.Refusal
	}
	if resp.Text != "" {
		r.Emit(model.Delta{Text: resp.Text})
	}
	if rs := msg.ReasoningContent + msg.Reasoning; rs != "" {
		r.Emit(model.Delta{Reasoning: rs})
		resp.Reasoning = []model.ReasoningBlock{{Type: "thinking", Text: rs}}
	}
	for i := range msg.ToolCalls {
		fn := &msg.ToolCalls[i].Function
		if fn.Name != "" || fn.Arguments != "" {
			r.Emit(model.Delta{ToolCallIndex: i, ToolName: fn.Name, ArgumentsFragment: fn.Arguments})
		}
	}
	if len(msg.ToolCalls) > 0 {
		resp.ToolCalls = make([]model.ToolCall, len(msg.ToolCalls))
		for i := range msg.ToolCalls {
			tc := &msg.ToolCalls[i]
			if tc.Function.Name == "" {
				return nil, r.Malformed("tool call %d has no function name (arguments %q)", i, transport.Excerpt([]byte(tc.Function.Arguments), 80))
			}
			id := tc.ID
			if id == "" {
				id = c.cfg.NewID()
			}
			resp.ToolCalls[i] = model.ToolCall{ID: id, Name: tc.Function.Name, Arguments: transport.ArgumentsString(tc.Function.Arguments)}
			if len(tc.ExtraContent) > 0 && string(tc.ExtraContent) != "null" {
				resp.ToolCalls[i].Extra = append(json.RawMessage(nil), tc.ExtraContent...)
			}
		}
	}
	resp.FinishReason = finishReason(w.Choices[0].FinishReason, len(resp.ToolCalls) > 0)
	return resp, nil
}

// accumulateWhole turns a whole reply into one chunk for the stream
// accumulator.
func (c *Client) accumulateWhole(r *transport.Reply, w *wholeReply) (*model.Response, error) {
	var a reply
	a.model, a.usage, a.finish = w.Model, w.Usage, w.Choices[0].FinishReason
	msg := &w.Choices[0].Message
	ch := chunk{Choices: []chunkChoice{{Delta: chunkDelta{ReasoningContent: msg.ReasoningContent, Reasoning: msg.Reasoning}}}}
	d := &ch.Choices[0].Delta
	if msg.Content != nil {
		d.Content = *msg.Content
	} else if msg.Refusal != nil {
		d.Content = *msg.Refusal
	}
	for i, tc := range msg.ToolCalls {
		td := toolCallDelta{Index: &i, ID: tc.ID, ExtraContent: tc.ExtraContent}
		td.Function.Name, td.Function.Arguments = tc.Function.Name, tc.Function.Arguments
		d.ToolCalls = append(d.ToolCalls, td)
	}
	a.add(r, &ch)
	return c.finish(r, &a)
}

// streamError turns an error object sent in place of a completion (as
// OpenRouter and some proxies do on a 200) into an error, transient when its
// code says so.
func streamError(r *transport.Reply, raw json.RawMessage) error {
	body := append([]byte(`{"error":`), raw...)
	body = append(body, '}')
	msg, ok := transport.APIErrorText(body)
	if !ok {
		msg = transport.Excerpt(raw, 200)
	}
	var code struct {
		Code json.RawMessage `json:"code"`
	}
	_ = json.Unmarshal(raw, &code)
	err := fmt.Errorf("%s: error in the reply from %s (model %s): %s", r.Provider, r.URL, r.Model, msg)
	switch strings.Trim(string(code.Code), `"`) {
	case "429", "500", "502", "503", "504", "529", "rate_limit_exceeded", "server_error":
		return transport.Transient(err)
	}
	return err
}
