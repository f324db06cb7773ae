// Package workload is the work every contender of the comparison does, kept
// in one place so the numbers compare: the prompts, the one tool add, the
// calls the fake server asks for, the answer every session must end with,
// and the per-session count of tool calls that proves a session did exactly
// the work.
package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
)

// K is the number of tool calls per session: the fake server answers the
// first K requests of a session with a call to add and request K+1 with
// the final answer, so a session is K+1 model round trips.
const K = 10

// Iterations is the number of model round trips per session.
const Iterations = K + 1

// Final is the exact text every session must end with.
const Final = "the sums are done"

// SystemPrompt and Prompt start every session.
const (
	SystemPrompt = "You add numbers."
	Prompt       = "add the numbers"
)

// ModelName is the model every contender asks the fake server for, and
// APIKey the key it sends (the server ignores it).
const (
	ModelName = "bench"
	APIKey    = "bench-key"
)

// The one tool.
const (
	ToolName        = "add"
	ToolDescription = "Add two integers."
	ToolSchema      = `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`
)

// AddInput is add's argument object, for frameworks that infer the schema
// from a Go type.
type AddInput struct {
	A int `json:"a"`
	B int `json:"b"`
}

// Args returns the arguments of the i-th call (from 0) the fake server
// asks for, and Sum what add returns for them. The sums are distinct, so
// the server can check every tool result in the conversation.
func Args(i int) (a, b int) { return i + 1, 100 + i }

// Sum is the result of the i-th call.
func Sum(i int) int { a, b := Args(i); return a + b }

// CallID is the ID of the i-th tool call.
func CallID(i int) string { return fmt.Sprintf("call_%d", i) }

// Session counts one session's tool calls. Put it in the session's context
// with WithSession; every contender's add tool calls Add with the context
// its framework hands the tool.
type Session struct {
	calls atomic.Int32
}

// Calls is the number of add calls the session executed.
func (s *Session) Calls() int { return int(s.calls.Load()) }

type sessionKey struct{}

// WithSession returns a context carrying a fresh Session.
func WithSession(ctx context.Context) (context.Context, *Session) {
	s := &Session{}
	return context.WithValue(ctx, sessionKey{}, s), s
}

// ErrNoSession is returned by Add when the framework did not pass the
// session's context to the tool: such a call cannot be counted.
var ErrNoSession = errors.New("add: called without the benchmark session in its context (the framework did not pass the run's context to the tool)")

// Add is the tool: it counts the call in the session found in ctx and
// returns a+b.
func Add(ctx context.Context, a, b int) (int, error) {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	if s == nil {
		return 0, ErrNoSession
	}
	s.calls.Add(1)
	return a + b, nil
}

// AddJSON is Add over the JSON argument object {"a":…,"b":…}.
func AddJSON(ctx context.Context, args []byte) (int, error) {
	var in AddInput
	if err := json.Unmarshal(args, &in); err != nil {
		return 0, fmt.Errorf("add: arguments %s: %w", args, err)
	}
	return Add(ctx, in.A, in.B)
}

// Check says whether a session did exactly the work: K tool calls and the
// exact final text.
func Check(s *Session, final string) error {
	if s.Calls() != K || final != Final {
		return fmt.Errorf("session did %d add calls and ended with %q; want %d calls and %q", s.Calls(), final, K, Final)
	}
	return nil
}
