package scripted

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentloop/agentloop/model"
)

// Errors reported by Generate and Err, for errors.Is.
var (
	// ErrExpectation marks a request that did not match its step's Expect.
	ErrExpectation = errors.New("scripted: request did not match the script's expectation")
	// ErrPastEnd marks a request that arrived after a non-repeating script
	// had played all its steps.
	ErrPastEnd = errors.New("scripted: request arrived past the end of the script")
	// ErrUnplayed marks steps of a non-repeating script that were never played.
	ErrUnplayed = errors.New("scripted: script steps never played")
)

// maxFailures bounds how many expectation failures a Model keeps, so a
// repeating script that keeps failing does not grow without limit.
const maxFailures = 16

// Model plays a Script. It implements model.Model and is safe for
// concurrent use; concurrent requests take steps in the order they reach
// the Model.
type Model struct {
	script *Script
	record bool

	mu       sync.Mutex
	received int              // requests that took (or tried to take) a step
	requests []*model.Request // deep copies, only when record is set
	failures []error          // expectation failures, at most maxFailures
	dropped  int              // expectation failures beyond maxFailures
	pastEnd  int              // requests after the end of a non-repeating script
	firstEnd int              // 1-based number of the first of them
}

var _ model.Model = (*Model)(nil)

// New returns a Model that plays s from its first step and records every
// request it receives. s is shared, not copied: do not modify it afterwards.
func New(s *Script) *Model { return &Model{script: s, record: true} }

// NewCompact is New without request recording: Requests returns nil. Use it
// when many Models share one Script (benchmarks, load demos); each costs one
// small allocation.
func NewCompact(s *Script) *Model { return &Model{script: s} }

// Replies returns a recording Model playing the given steps once, for Go
// tests:
//
//	m := scripted.Replies(
//		scripted.Call("read_file", `{"path":"go.mod"}`),
//		scripted.Text("The module is example.com/x."),
//	)
func Replies(steps ...Step) *Model {
	return New(&Script{Name: "Replies", Steps: steps})
}

// Generate plays the next step. It returns the step's error, or its reply
// after the step's delay, streaming it to stream when stream is non-nil.
//
// A request whose context is already done returns ctx.Err() and takes no
// step. Otherwise every request takes one step, even when the context ends
// during the delay or the request fails the step's expectation.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream model.StreamFunc) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		req = &model.Request{}
	}
	step, n, err := m.take(req)
	if err != nil {
		return nil, err
	}
	if step.Delay > 0 {
		t := time.NewTimer(step.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if step.Err != nil {
		return nil, step.Err
	}
	resp := respond(step, n, req)
	if stream != nil {
		chunk := step.StreamChunk
		if chunk <= 0 {
			chunk = m.script.StreamChunk
		}
		if err := streamReply(ctx, resp, chunk, stream); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// take records req and returns the step it plays and the 0-based number of
// the request.
func (m *Model) take(req *model.Request) (*Step, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.received
	m.received++
	if m.record {
		m.requests = append(m.requests, cloneRequest(req))
	}
	steps := m.script.Steps
	if len(steps) == 0 || (!m.script.Repeat && n >= len(steps)) {
		if m.pastEnd++; m.pastEnd == 1 {
			m.firstEnd = n + 1
		}
		return nil, n, &scriptError{
			msg:  fmt.Sprintf("script %s: request %d arrived but the script has %d steps", m.name(), n+1, len(steps)),
			kind: ErrPastEnd,
		}
	}
	idx := n % len(steps)
	step := &steps[idx]
	if step.Expect != nil {
		if problems := step.Expect.check(req); len(problems) > 0 {
			where := fmt.Sprintf("step %d", idx+1)
			if pass := n/len(steps) + 1; pass > 1 {
				where += fmt.Sprintf(" (pass %d)", pass)
			}
			err := &scriptError{
				msg:  fmt.Sprintf("script %s %s: %s", m.name(), where, strings.Join(problems, "; ")),
				kind: ErrExpectation,
			}
			if len(m.failures) < maxFailures {
				m.failures = append(m.failures, err)
			} else {
				m.dropped++
			}
			return nil, n, err
		}
	}
	return step, n, nil
}

// Skip moves the cursor n steps forward without playing them, as if n
// requests had been answered. A resumed session uses it to pass the replies
// already recorded in its log. Skipped steps count as played and keep their
// request numbers (default tool call IDs of later steps are unchanged);
// nothing is recorded for them. n <= 0 does nothing.
func (m *Model) Skip(n int) {
	if n <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.received += n
}

// Requests returns deep copies of every request that took a step, in
// order, including those that failed an expectation or arrived past the
// end (requests whose context was already done are not recorded). It
// returns nil for a Model made with NewCompact.
func (m *Model) Requests() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.requests == nil {
		return nil
	}
	out := make([]*model.Request, len(m.requests))
	for i, r := range m.requests {
		out[i] = cloneRequest(r)
	}
	return out
}

// Remaining returns how many steps have not been played. For a repeating
// script it is the number left in the current pass: the script's length
// before the first request, zero when the last pass ended exactly on its
// final step.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.remaining()
}

func (m *Model) remaining() int {
	n := len(m.script.Steps)
	switch {
	case n == 0:
		return 0
	case !m.script.Repeat:
		return max(n-m.received, 0)
	case m.received == 0:
		return n
	default:
		return (n - m.received%n) % n
	}
}

// Err reports what went wrong so far, or nil: expectation failures
// (ErrExpectation), requests past the end of the script (ErrPastEnd) and,
// for a non-repeating script, steps never played (ErrUnplayed). Call it at
// the end of a test:
//
//	if err := m.Err(); err != nil {
//		t.Error(err)
//	}
func (m *Model) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	errs := append([]error(nil), m.failures...)
	if m.dropped > 0 {
		errs = append(errs, &scriptError{
			msg:  fmt.Sprintf("script %s: %d more expectation failures not shown", m.name(), m.dropped),
			kind: ErrExpectation,
		})
	}
	n := len(m.script.Steps)
	if m.pastEnd > 0 {
		msg := fmt.Sprintf("script %s: request %d arrived but the script has %d steps", m.name(), m.firstEnd, n)
		if m.pastEnd > 1 {
			msg += fmt.Sprintf(" (%d requests past the end in all)", m.pastEnd)
		}
		errs = append(errs, &scriptError{msg: msg, kind: ErrPastEnd})
	}
	if rem := m.remaining(); !m.script.Repeat && rem > 0 {
		which := fmt.Sprintf("step %d", n)
		if rem > 1 {
			which = fmt.Sprintf("steps %d-%d", n-rem+1, n)
		}
		errs = append(errs, &scriptError{
			msg:  fmt.Sprintf("script %s: %d of %d steps never played (%s)", m.name(), rem, n, which),
			kind: ErrUnplayed,
		})
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	default:
		return errors.Join(errs...)
	}
}

func (m *Model) name() string {
	if m.script.Name == "" {
		return "(unnamed)"
	}
	return m.script.Name
}

// scriptError is an error with a complete message that matches one of the
// package's sentinels with errors.Is.
type scriptError struct {
	msg  string
	kind error
}

func (e *scriptError) Error() string { return e.msg }
func (e *scriptError) Unwrap() error { return e.kind }

// check returns a description of every way req differs from e.
func (e *Expect) check(req *model.Request) []string {
	var problems []string
	var last *model.Message
	if len(req.Messages) > 0 {
		last = &req.Messages[len(req.Messages)-1]
	}
	if e.LastMessageRole != "" {
		switch {
		case last == nil:
			problems = append(problems, fmt.Sprintf("expected last message role %s, got no messages", e.LastMessageRole))
		case last.Role != e.LastMessageRole:
			problems = append(problems, fmt.Sprintf("expected last message role %s, got %s", e.LastMessageRole, last.Role))
		}
	}
	if e.LastMessageContains != "" {
		switch {
		case last == nil:
			problems = append(problems, fmt.Sprintf("expected last message to contain %q, got no messages", e.LastMessageContains))
		case !strings.Contains(last.Content, e.LastMessageContains):
			problems = append(problems, fmt.Sprintf("expected last message to contain %q, got %q", e.LastMessageContains, abbreviate(last.Content, 120)))
		}
	}
	for _, name := range e.ToolsOffered {
		offered := false
		for _, t := range req.Tools {
			if t.Name == name {
				offered = true
				break
			}
		}
		if !offered {
			names := make([]string, len(req.Tools))
			for i, t := range req.Tools {
				names[i] = t.Name
			}
			problems = append(problems, fmt.Sprintf("expected tool %s to be offered, got [%s]", name, strings.Join(names, ", ")))
		}
	}
	if e.MessageCount > 0 && len(req.Messages) != e.MessageCount {
		problems = append(problems, fmt.Sprintf("expected %d messages, got %d", e.MessageCount, len(req.Messages)))
	}
	return problems
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// respond builds the reply of step for the n-th (0-based) request.
func respond(step *Step, n int, req *model.Request) *model.Response {
	resp := &model.Response{Text: step.Text, FinishReason: step.FinishReason, Model: "scripted"}
	if len(step.ToolCalls) > 0 {
		resp.ToolCalls = make([]model.ToolCall, len(step.ToolCalls))
		for i, tc := range step.ToolCalls {
			if tc.ID == "" {
				tc.ID = fmt.Sprintf("call_%d_%d", n+1, i)
			}
			tc.Arguments = bytes.Clone(tc.Arguments)
			resp.ToolCalls[i] = tc
		}
	}
	if resp.FinishReason == "" {
		resp.FinishReason = model.FinishStop
		if len(resp.ToolCalls) > 0 {
			resp.FinishReason = model.FinishToolCalls
		}
	}
	if step.Usage != nil {
		resp.Usage = *step.Usage
	} else {
		in := 0
		for _, msg := range req.Messages {
			in += len(msg.Content) + callBytes(msg.ToolCalls)
		}
		resp.Usage = model.Usage{InputTokens: in / 4, OutputTokens: (len(resp.Text) + callBytes(resp.ToolCalls)) / 4}
		resp.UsageEstimated = true
	}
	return resp
}

func callBytes(calls []model.ToolCall) int {
	n := 0
	for _, c := range calls {
		n += len(c.Name) + len(c.Arguments)
	}
	return n
}

// streamReply sends resp to stream as deltas of at most chunk bytes (never
// splitting a UTF-8 sequence; chunk <= 0 means one delta per text or tool
// call): the text first, then each tool call, its first delta carrying the
// tool name.
func streamReply(ctx context.Context, resp *model.Response, chunk int, stream model.StreamFunc) error {
	for piece := range chunks(resp.Text, chunk) {
		if err := ctx.Err(); err != nil {
			return err
		}
		stream(model.Delta{Text: piece})
	}
	for i, tc := range resp.ToolCalls {
		first := true
		for piece := range chunks(string(tc.Arguments), chunk) {
			if err := ctx.Err(); err != nil {
				return err
			}
			d := model.Delta{ToolCallIndex: i, ArgumentsFragment: piece}
			if first {
				d.ToolName, first = tc.Name, false
			}
			stream(d)
		}
		if first { // no arguments at all: still announce the call
			stream(model.Delta{ToolCallIndex: i, ToolName: tc.Name})
		}
	}
	return nil
}

// chunks yields s in pieces of at most n bytes, extended to the next rune
// boundary; all of s at once when n <= 0; nothing when s is empty.
func chunks(s string, n int) iter.Seq[string] {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			end := len(s)
			if n > 0 && n < end {
				end = n
				for end < len(s) && !utf8.RuneStart(s[end]) {
					end++
				}
			}
			if !yield(s[:end]) {
				return
			}
			s = s[end:]
		}
	}
}

func cloneRequest(r *model.Request) *model.Request {
	c := *r
	if r.Messages != nil {
		c.Messages = make([]model.Message, len(r.Messages))
		for i, msg := range r.Messages {
			if msg.ToolCalls != nil {
				calls := make([]model.ToolCall, len(msg.ToolCalls))
				for j, tc := range msg.ToolCalls {
					tc.Arguments = bytes.Clone(tc.Arguments)
					calls[j] = tc
				}
				msg.ToolCalls = calls
			}
			if msg.Reasoning != nil {
				msg.Reasoning = append([]model.ReasoningBlock(nil), msg.Reasoning...)
			}
			c.Messages[i] = msg
		}
	}
	if r.Tools != nil {
		c.Tools = make([]model.ToolSpec, len(r.Tools))
		for i, t := range r.Tools {
			t.Parameters = bytes.Clone(t.Parameters)
			c.Tools[i] = t
		}
	}
	if r.Temperature != nil {
		temp := *r.Temperature
		c.Temperature = &temp
	}
	return &c
}
