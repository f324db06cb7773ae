package transport

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/model"
)

// Arguments turns the text a model wrote as tool-call arguments into a
// json.RawMessage that is always valid JSON: "{}" when empty, the text
// itself when it is valid JSON, and otherwise the text as a JSON string, so
// the tool's schema check fails and the model is told to fix its call
// instead of the session crashing on an unencodable event.
func Arguments(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(raw) {
		return json.RawMessage(bytes.Clone(raw))
	}
	quoted, _ := json.Marshal(string(raw))
	return quoted
}

// ArgumentsString is Arguments for text held in a string; the result owns
// its bytes.
func ArgumentsString(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	raw := []byte(s)
	if json.Valid(raw) {
		return raw
	}
	quoted, _ := json.Marshal(s)
	return quoted
}

// NewID returns prefix followed by 24 random hex digits, for tool calls a
// provider sent without an ID.
func NewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// ModelName picks the model of a call: the request's, else the client's.
func ModelName(provider, requested, configured string) (string, error) {
	if requested != "" {
		return requested, nil
	}
	if configured != "" {
		return configured, nil
	}
	return "", fmt.Errorf("%s: no model name: set it in the request or the config (e.g. --model %s/NAME)", provider, provider)
}

// Complete fills in what a reply may leave out: the model name, and token
// counts (estimated, and marked so) when the provider sent none.
func Complete(req *model.Request, resp *model.Response, name string) *model.Response {
	if resp.Model == "" {
		resp.Model = name
	}
	if resp.Usage == (model.Usage{}) {
		resp.Usage = EstimateUsage(req, resp)
		resp.UsageEstimated = true
	}
	return resp
}

// JSONErr adds the byte offset to a JSON syntax error.
func JSONErr(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%v at offset %d", se, se.Offset)
	}
	return err
}

// EstimateUsage guesses token counts at four bytes a token, for providers
// that report none.
func EstimateUsage(req *model.Request, resp *model.Response) model.Usage {
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content) + 4
		for _, tc := range m.ToolCalls {
			in += len(tc.Name) + len(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	out := len(resp.Text)
	for _, tc := range resp.ToolCalls {
		out += len(tc.Name) + len(tc.Arguments)
	}
	for _, r := range resp.Reasoning {
		out += len(r.Text)
	}
	return model.Usage{InputTokens: (in + 3) / 4, OutputTokens: (out + 3) / 4}
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// GetBuffer returns an empty buffer from a pool; PutBuffer gives it back.
func GetBuffer() *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// PutBuffer returns b to the pool unless it grew very large.
func PutBuffer(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		bufPool.Put(b)
	}
}

// AppendJSON appends v encoded as a request body is — without escaping
// HTML characters, which providers take as they are — to b.
func AppendJSON(b []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadBody reads a whole (non-streaming) body into a pooled buffer. The
// caller must PutBuffer it.
func ReadBody(r io.Reader) (*bytes.Buffer, error) {
	b := GetBuffer()
	if _, err := b.ReadFrom(r); err != nil {
		PutBuffer(b)
		return nil, err
	}
	return b, nil
}

// ToolNames maps tool-call IDs to tool names across a conversation, for
// providers that want the name on a tool result the caller left unnamed.
func ToolNames(msgs []model.Message) map[string]string {
	var names map[string]string
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			if names == nil {
				names = make(map[string]string)
			}
			names[tc.ID] = tc.Name
		}
	}
	return names
}
