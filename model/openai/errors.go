package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

func statusHint(status int, msg, name string) string {
	switch {
	case status == http.StatusNotFound && strings.Contains(strings.ToLower(msg), "model"):
		return fmt.Sprintf("check the model name %q and --base-url", name)
	case status == http.StatusBadRequest && strings.Contains(msg, "max_tokens") && strings.Contains(msg, "max_completion_tokens"):
		return "this model wants max_completion_tokens"
	}
	return ""
}

// wholeReply is a non-streaming chat.completion.
type wholeReply struct {
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
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// parseJSON reads a whole chat.completion (also when a server ignored
// "stream": true, in which case its content is emitted as one delta).
func (c *Client) parseJSON(r *transport.Reply) (*model.Response, error) {
	buf, err := transport.ReadBody(r.Body)
	if err != nil {
		return nil, err
	}
	defer transport.PutBuffer(buf)
	var w wholeReply
	if err := json.Unmarshal(buf.Bytes(), &w); err != nil {
		return nil, r.Malformed("%s (%v)", transport.DescribeBody(r.MediaType, buf.Bytes()), jsonErr(err))
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		return nil, streamError(r, w.Error)
	}
	if len(w.Choices) == 0 {
		return nil, r.Malformed("the reply has no choices: %q", transport.Excerpt(buf.Bytes(), 120))
	}
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
		td := toolCallDelta{Index: &i, ID: tc.ID}
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
