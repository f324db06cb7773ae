package scripted

import (
	"encoding/json"
	"time"

	"github.com/agentloop/agentloop/model"
)

// Script is a parsed script: the replies a Model plays, in order.
//
// A Script is immutable once handed to New: any number of Models may share
// it, each with its own cursor.
type Script struct {
	// Name identifies the script in error messages (the file path for
	// Load, the name given to Parse).
	Name        string
	Description string
	Steps       []Step
	// Repeat plays the steps again from the start after the last one,
	// forever.
	Repeat bool
	// StreamChunk is the default size in bytes of streamed deltas for steps
	// that do not set their own; zero sends each text and each tool call's
	// arguments as one delta.
	StreamChunk int
}

// Step is one scripted reply: either a response (Text and/or ToolCalls) or
// an error (Err).
type Step struct {
	// Text is the assistant text of the reply.
	Text string
	// ToolCalls are the tool calls of the reply. An empty ID is filled in
	// with call_<n>_<i> when the step is played. Arguments are sent as
	// given, so a step can deliberately carry malformed arguments.
	ToolCalls []model.ToolCall
	// FinishReason defaults to model.FinishToolCalls when there are tool
	// calls and model.FinishStop otherwise.
	FinishReason string
	// Usage is reported as given; when nil a deterministic estimate is
	// reported instead (see the package documentation).
	Usage *model.Usage
	// Delay is waited before replying; a cancelled context ends the wait.
	Delay time.Duration
	// StreamChunk overrides Script.StreamChunk for this step when positive.
	StreamChunk int
	// Err, when set, is returned by Generate instead of a response.
	Err error
	// Expect, when set, is checked against the request that plays the step.
	Expect *Expect
}

// Expect describes what the request playing a step must look like. Zero
// fields are not checked.
type Expect struct {
	// LastMessageRole is the role of the last message of the request.
	LastMessageRole model.Role `json:"last_message_role,omitempty"`
	// LastMessageContains must be a substring of the last message's content.
	LastMessageContains string `json:"last_message_contains,omitempty"`
	// ToolsOffered must all be among the request's tools (others may be
	// offered too).
	ToolsOffered []string `json:"tools_offered,omitempty"`
	// MessageCount is the exact number of messages in the request.
	MessageCount int `json:"message_count,omitempty"`
}

// Text returns a step that replies with text and finishes with "stop".
func Text(s string) Step { return Step{Text: s} }

// Call returns a step that asks for one tool call. argsJSON is sent
// verbatim (it is not validated), so tests can script malformed arguments.
func Call(name, argsJSON string) Step {
	return Step{ToolCalls: []model.ToolCall{{Name: name, Arguments: json.RawMessage(argsJSON)}}}
}

// Calls returns one step that asks for all the tool calls of the given
// steps, in order, with their texts joined: Calls(Call("a", `{}`), Call("b", `{}`))
// scripts two parallel tool calls.
func Calls(steps ...Step) Step {
	var out Step
	for _, s := range steps {
		out.Text += s.Text
		out.ToolCalls = append(out.ToolCalls, s.ToolCalls...)
	}
	return out
}

// Fail returns a step that makes Generate return err. Wrap model.ErrTimeout
// or model.ErrMalformed, or use a *model.RetryableError, to script the
// failures the loop handles specially.
func Fail(err error) Step { return Step{Err: err} }

// WithText returns a copy of s that also replies with text.
func (s Step) WithText(text string) Step { s.Text = text; return s }

// WithUsage returns a copy of s that reports usage u instead of an estimate.
func (s Step) WithUsage(u model.Usage) Step { s.Usage = &u; return s }

// WithDelay returns a copy of s that waits d before replying.
func (s Step) WithDelay(d time.Duration) Step { s.Delay = d; return s }

// WithFinishReason returns a copy of s with an explicit finish reason.
func (s Step) WithFinishReason(reason string) Step { s.FinishReason = reason; return s }

// WithStreamChunk returns a copy of s that streams in chunks of n bytes.
func (s Step) WithStreamChunk(n int) Step { s.StreamChunk = n; return s }

// WithExpect returns a copy of s that checks the request playing it.
func (s Step) WithExpect(e Expect) Step { s.Expect = &e; return s }
