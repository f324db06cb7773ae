package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// TypeConversationCondensed records that the conversation the model sees
// was made smaller to fit its context window.
const TypeConversationCondensed EventType = "conversation.condensed"

// ReasonContextExhausted: the conversation no longer fits the model's
// context window even after condensing it.
const ReasonContextExhausted StopReason = "context_exhausted"

// ConversationCondensed shrinks the conversation (the fold applies it, so
// the log says exactly what the model saw afterwards): first the results
// of old tool calls are cut to a stub, then, if that is not enough, the
// oldest turns after the task are replaced by a summary — written by a
// model (By "model", see condense_model.go) or a digest of the calls and
// their first lines (By "digest"). The summary text is recorded, so a
// replay never calls a model again.
type ConversationCondensed struct {
	// Iteration is the iteration whose model call needed the room.
	Iteration int `json:"iteration,omitempty"`
	// ShortenedBefore: tool results before this conversation index are
	// replaced by a stub saying how long they were.
	ShortenedBefore int `json:"shortened_before,omitempty"`
	// Messages [DroppedFrom, DroppedTo) are replaced by one user message
	// holding Summary.
	DroppedFrom  int    `json:"dropped_from,omitempty"`
	DroppedTo    int    `json:"dropped_to,omitempty"`
	Summary      string `json:"summary,omitempty"`
	TokensBefore int    `json:"tokens_before"`
	TokensAfter  int    `json:"tokens_after"`
	// By is how Summary was written: CondensedByModel or CondensedByDigest
	// (empty: nothing was dropped, or a log from before models summarised).
	By string `json:"by,omitempty"`
	// Asked is set when a model was called for the summary, Model when
	// that was not the session's own (Limits.CondenseModel); Usage and
	// CostUSD are that call's, counted in the session's usage and budgets,
	// failed or not. A call to the session's own model counts among its
	// model calls (State.InteractionCount).
	Asked   bool        `json:"asked,omitempty"`
	Model   string      `json:"model,omitempty"`
	Usage   model.Usage `json:"usage,omitzero"`
	CostUSD float64     `json:"cost_usd,omitempty"`
	// SummaryError says why a summary by model was wanted but the digest
	// was used: the call failed, the reply was empty or too long, or the
	// budget could not pay for it.
	SummaryError string `json:"summary_error,omitempty"`
}

// How a condensation's summary was written.
const (
	CondensedByModel  = "model"
	CondensedByDigest = "digest"
)

// EventType implements Payload.
func (*ConversationCondensed) EventType() EventType { return TypeConversationCondensed }

// Condensation parameters: it starts when the conversation passes
// condenseAt percent of the window, keeps the latest keepTurns turns
// whole, and leaves tool results shorter than stubMin alone.
const (
	condenseAt = 80
	keepTurns  = 2
	stubMin    = 300
)

// condensed returns conv with c applied; conv is not modified.
func condensed(conv []model.Message, c *ConversationCondensed) []model.Message {
	out := make([]model.Message, 0, len(conv))
	for i, m := range conv {
		if i < c.ShortenedBefore && m.Role == model.RoleTool && len(m.Content) > stubMin {
			m.Content = fmt.Sprintf("[%d bytes of output removed to save context; run the tool again if you need it]", len(m.Content))
		}
		out = append(out, m)
	}
	if c.DroppedTo > c.DroppedFrom && c.DroppedTo <= len(out) {
		rest := out[c.DroppedTo:]
		out = append(append(out[:c.DroppedFrom:c.DroppedFrom], model.Message{Role: model.RoleUser, Content: c.Summary}), rest...)
	}
	return out
}

// fitContext keeps the next request inside the model's context window
// (Limits.ContextTokens): it records a condensation when the conversation
// is near the window, and ends the session when even that does not make
// it fit. It reports whether the model may be called.
func (s *Session) fitContext(ctx context.Context) (bool, error) {
	st := s.state
	window := st.Limits.ContextTokens
	if window <= 0 {
		return true, nil
	}
	budget := window * condenseAt / 100
	before := s.estimateTokens(st.Conversation)
	if before <= budget {
		return true, nil
	}
	// Keep the latest turns whole if that is enough, else only the last.
	var c *ConversationCondensed
	after := before
	for keep := keepTurns; keep >= 1 && after > budget; keep-- {
		c = &ConversationCondensed{Iteration: st.CurrentIteration, TokensBefore: before, ShortenedBefore: turnStart(st.Conversation, keep)}
		conv := condensed(st.Conversation, c)
		after = s.estimateTokens(conv)
		if after > budget {
			from, to := firstTurn(conv), turnStart(conv, keep)
			if to > from {
				c.DroppedFrom, c.DroppedTo, c.Summary, c.By = from, to, digest(conv[from:to]), CondensedByDigest
				after = s.estimateTokens(condensed(st.Conversation, c))
			}
		}
	}
	if c.By != "" && after < before && st.Limits.Condense == CondensedByModel {
		if err := s.commitFor(ctx, effectModelCall); err != nil {
			return false, err
		}
		after = s.summarise(ctx, c, after, budget)
		if ctx.Err() != nil && c.By != CondensedByModel {
			return false, nil // interrupted: nothing is recorded, and the resumed session condenses again
		}
	}
	c.TokensAfter = after
	if after < before {
		s.emit(c)
	} else {
		after = before // nothing could be freed
	}
	if after > window {
		s.endSession(&SessionEnded{Status: StatusFailed, Reason: ReasonContextExhausted,
			Detail: fmt.Sprintf("the conversation needs about %d tokens and the context window is %d, even after condensing; raise it (--context-window, or --num-ctx for Ollama) or split the task", after, window),
			Answer: st.LastAnswer(), Partial: true}, "the conversation no longer fits the context window")
		return false, nil
	}
	return true, nil
}

func (s *Session) estimateTokens(conv []model.Message) int {
	if fn := s.r.cfg.EstimateUsage; fn != nil {
		return fn(&model.Request{Messages: conv}, &model.Response{}).InputTokens
	}
	n := 0
	for _, m := range conv {
		n += len(m.Content) + len(m.Role) + 4
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	return n / 4
}

// firstTurn is the index after the system prompt and the task: what comes
// before it is never dropped.
func firstTurn(conv []model.Message) int {
	for i, m := range conv {
		if m.Role == model.RoleUser {
			return i + 1
		}
	}
	return len(conv)
}

// turnStart is the index of the assistant message that starts the k-th
// latest turn, so dropping or stubbing before it never separates a tool
// result from its call.
func turnStart(conv []model.Message, k int) int {
	seen := 0
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == model.RoleAssistant {
			seen++
			if seen == k {
				return i
			}
		}
	}
	return 0
}

// digest summarises dropped turns: each call with the first line of its
// result, and the first line of what the model said.
func digest(msgs []model.Message) string {
	var b strings.Builder
	b.WriteString(digestSummaryHeader)
	results := map[string]string{}
	for _, m := range msgs {
		if m.Role == model.RoleTool {
			results[m.ToolCallID] = firstLine(m.Content, 100)
		}
	}
	lines := 0
	for _, m := range msgs {
		if lines >= 60 {
			b.WriteString("- …\n")
			break
		}
		switch m.Role {
		case model.RoleAssistant:
			if t := firstLine(m.Content, 160); t != "" {
				fmt.Fprintf(&b, "- you said: %s\n", t)
				lines++
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "- %s(%s) → %s\n", c.Name, firstLine(string(c.Arguments), 100), results[c.ID])
				lines++
			}
		case model.RoleUser:
			if t := firstLine(m.Content, 160); t != "" {
				fmt.Fprintf(&b, "- user: %s\n", t)
				lines++
			}
		}
	}
	return b.String()
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// Condensation is a conversation.condensed as people read it: where it
// happened, how the dropped turns were summarised and what it cost (the
// summary itself is in the event).
type Condensation struct {
	Iteration    int    `json:"iteration"`
	TokensBefore int    `json:"tokens_before"`
	TokensAfter  int    `json:"tokens_after"`
	Stubbed      bool   `json:"stubbed,omitempty"` // old tool results were cut to a stub
	Dropped      int    `json:"dropped,omitempty"` // messages replaced by the summary
	By           string `json:"by,omitempty"`
	// Model wrote the summary when it is not the session's own.
	Model        string      `json:"model,omitempty"`
	Usage        model.Usage `json:"usage,omitzero"`
	CostUSD      float64     `json:"cost_usd,omitempty"`
	SummaryError string      `json:"summary_error,omitempty"`
}

func condensationOf(d *ConversationCondensed) Condensation {
	c := Condensation{Iteration: d.Iteration, TokensBefore: d.TokensBefore, TokensAfter: d.TokensAfter, Stubbed: d.ShortenedBefore > 0,
		By: d.By, Model: d.Model, Usage: d.Usage, CostUSD: d.CostUSD, SummaryError: d.SummaryError}
	if d.DroppedTo > d.DroppedFrom {
		c.Dropped = d.DroppedTo - d.DroppedFrom
	}
	return c
}

// String describes the condensation in one line, for people.
func (c Condensation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "before step %d: %d → %d tokens", c.Iteration, c.TokensBefore, c.TokensAfter)
	if c.Stubbed {
		b.WriteString(" · old tool output cut")
	}
	if c.Dropped > 0 {
		fmt.Fprintf(&b, " · %d messages replaced by a summary", c.Dropped)
		switch c.By {
		case CondensedByModel:
			b.WriteString(" written by ")
			if c.Model != "" {
				b.WriteString(c.Model)
			} else {
				b.WriteString("the session's model")
			}
		case CondensedByDigest:
			b.WriteString(" (digest)")
		}
	}
	if c.Usage != (model.Usage{}) {
		fmt.Fprintf(&b, " · %d+%d tokens", c.Usage.InputTokens, c.Usage.OutputTokens)
	}
	if c.CostUSD > 0 {
		fmt.Fprintf(&b, " · $%.4f", c.CostUSD)
	}
	if c.SummaryError != "" {
		fmt.Fprintf(&b, " · no summary by model: %s", c.SummaryError)
	}
	return b.String()
}
