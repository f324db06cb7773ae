package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// Summaries by model. With Limits.Condense "model", the turns a
// condensation drops are summarised by a model — Limits.CondenseModel, or
// the session's own — instead of the digest:
//
//   - the request is one user message: summaryPrompt, the previous summary
//     (when the dropped turns start with one) and each dropped message,
//     cut to summaryEventChars, in order;
//   - the call and its usage are recorded in the conversation.condensed
//     event with the summary text, so a replay folds the same conversation
//     without a model; its tokens and cost count in the session's usage
//     and budgets like any model call's;
//   - the digest is used instead, with the reason in SummaryError, when
//     the call fails, the reply has no text, the summary would not leave
//     the conversation inside the window, or the budget left cannot pay
//     for the summary and the call after it.

// summaryPrompt asks for a state summary that a model can carry on from.
// Its shape follows OpenHands' LLMSummarizingCondenser.
const summaryPrompt = `You are maintaining a context-aware state summary for an agent working on a task with tools.
You will be given the messages that are being removed from the agent's conversation to save context, and the most recent previous summary if one exists. The agent keeps the task itself and its latest turns; everything else it will know only from your summary.
If the messages contain ANY task tracking (a plan, steps, their statuses), you MUST include a TASK_TRACKING section, keeping the exact step names and statuses.

Track:

USER_CONTEXT: (essential requirements, goals and clarifications from the user, concisely)
TASK_TRACKING: (active tasks or plan steps and their statuses)
COMPLETED: (what has been done so far, with brief results)
PENDING: (what still needs to be done)
CURRENT_STATE: (relevant state: values found, decisions made)

For code tasks, also:
CODE_STATE: (file paths, function signatures, data structures)
TESTS: (failing cases, error messages, outputs)
CHANGES: (edits made)
DEPS: (dependencies, imports, external calls)
VERSION_CONTROL_STATUS: (branch, commits)

PRIORITIZE:
1. Adapt the format to the task
2. Keep the user's requirements and goals
3. Separate what is done from what is pending
4. Keep every section short and relevant

SKIP: details irrelevant to the task.

Example, for a code task:
USER_CONTEXT: Fix the float formatting in card.py
COMPLETED: mod_float() in card.py changed, all tests pass
PENDING: update the documentation
CODE_STATE: mod_float() in card.py
TESTS: test_format() passes
CHANGES: str(val) replaces f"{val:.16G}"
DEPS: none changed
VERSION_CONTROL_STATUS: branch fix-float, last commit a1b2c3d`

// Limits of a summary request: each dropped message is cut to
// summaryEventChars, and the summary may use at most summaryMaxTokens.
const (
	summaryEventChars = 4000
	summaryMaxTokens  = 2048
	summaryMinTokens  = 64
)

// Headers of the message that replaces dropped turns: a summary that
// starts with one is a previous summary to the next condensation.
const (
	modelSummaryHeader  = "Summary of earlier steps, written to save context:\n"
	digestSummaryHeader = "Summary of earlier steps, condensed to save context:\n"
)

// summarise asks a model to write c's summary in place of its digest.
// after is the conversation's size with the digest, budget the size a
// condensation aims for. It fills c (summary, model, usage, cost, or the
// reason it kept the digest) and returns the conversation's size with the
// summary c now holds.
func (s *Session) summarise(ctx context.Context, c *ConversationCondensed, after, budget int) int {
	st := s.state
	dropped := st.Conversation[c.DroppedFrom:c.DroppedTo]
	room := budget - (after - s.estimateTokens([]model.Message{{Role: model.RoleUser, Content: c.Summary}}))
	maxTokens := min(room, summaryMaxTokens)
	if maxTokens < summaryMinTokens {
		c.SummaryError = fmt.Sprintf("no room for a summary: the latest turns alone need about %d of the %d tokens condensing aims for", budget-room, budget)
		return after
	}
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: summaryRequest(dropped)}}, MaxTokens: maxTokens}
	m, spec, err := s.summaryModel()
	if err != nil {
		c.SummaryError = err.Error()
		return after
	}
	if why := s.cannotAffordSummary(req, spec, after); why != "" {
		c.SummaryError = why
		return after
	}
	if spec != st.CurrentModel {
		c.Model = spec
	}
	c.Asked = true
	if d := st.Limits.ModelCallTimeout.Std(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, errModelCallTimeout)
		defer cancel()
	}
	resp, err := m.Generate(ctx, req, nil)
	if err != nil || resp == nil {
		if err == nil {
			err = errors.New("the model returned no reply and no error")
		}
		c.SummaryError = "the summary call failed: " + err.Error()
		return after
	}
	if (resp.Usage == (model.Usage{}) || resp.UsageEstimated) && s.r.cfg.EstimateUsage != nil {
		resp.Usage = s.r.cfg.EstimateUsage(req, resp)
	}
	c.Usage = resp.Usage
	if s.r.cfg.Price != nil {
		c.CostUSD, _ = s.r.cfg.Price(spec, resp.Usage)
	}
	text := strings.TrimSpace(resp.Text)
	if text == "" {
		c.SummaryError = "the model's summary was empty"
		return after
	}
	digest := c.Summary
	c.Summary, c.By = modelSummaryHeader+text, CondensedByModel
	withSummary := s.estimateTokens(condensed(st.Conversation, c))
	if withSummary > max(budget, after) {
		c.Summary, c.By = digest, CondensedByDigest
		c.SummaryError = fmt.Sprintf("the model's summary was too long (the conversation would need about %d tokens, %d with the digest)", withSummary, after)
		return after
	}
	return withSummary
}

// summaryModel is the model that writes summaries and its spec (for
// prices): Limits.CondenseModel, opened by the Env, or the session's own.
func (s *Session) summaryModel() (model.Model, string, error) {
	st := s.state
	spec := st.Limits.CondenseModel
	if spec == "" || spec == st.CurrentModel {
		return s.env.Model, st.CurrentModel, nil
	}
	if s.env.SwitchModel == nil {
		return nil, "", fmt.Errorf("condense model %q: this runner cannot open another model; leave condense_model out to summarise with the session's own", spec)
	}
	m, err := s.env.SwitchModel(spec)
	if err != nil {
		return nil, "", fmt.Errorf("condense model %q: %w", spec, err)
	}
	return m, spec, nil
}

// cannotAffordSummary says why the session's budgets cannot pay for the
// summary call and then the next call (about after tokens of input and
// its output cap), or "" when they can.
func (s *Session) cannotAffordSummary(req *model.Request, spec string, after int) string {
	l := s.state.Limits
	if l.BudgetTokens <= 0 && l.BudgetUSD <= 0 {
		return ""
	}
	e := s.estimate(req)
	if s.r.cfg.Price != nil {
		e.CostUSD, _ = s.r.cfg.Price(spec, model.Usage{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens})
	}
	next := model.Usage{InputTokens: after, OutputTokens: l.outputCap()}
	if l.BudgetTokens > 0 {
		need := s.state.Usage.Total() + e.InputTokens + e.OutputTokens + next.Total()
		if need > l.BudgetTokens {
			return fmt.Sprintf("the token budget cannot pay for a summary: about %d tokens with the next call, the budget is %d", need, l.BudgetTokens)
		}
	}
	if l.BudgetUSD > 0 {
		need := s.state.CostUSD + e.CostUSD + s.cost(next)
		if need > l.BudgetUSD {
			return fmt.Sprintf("the cost budget cannot pay for a summary: about %s with the next call, the budget is %s", usd(need), usd(l.BudgetUSD))
		}
	}
	return ""
}

// summaryRequest is the text of the summary request for the dropped
// messages: the prompt, the previous summary, then each message.
func summaryRequest(dropped []model.Message) string {
	var b strings.Builder
	b.WriteString(summaryPrompt)
	b.WriteString("\n\n<PREVIOUS SUMMARY>\n")
	if len(dropped) > 0 && dropped[0].Role == model.RoleUser {
		if prev, ok := previousSummary(dropped[0].Content); ok {
			b.WriteString(cut(prev, summaryEventChars))
			dropped = dropped[1:]
		}
	}
	b.WriteString("\n</PREVIOUS SUMMARY>\n\n")
	for i, m := range dropped {
		fmt.Fprintf(&b, "<EVENT id=%d role=%s>\n", i+1, m.Role)
		if m.Content != "" {
			b.WriteString(cut(m.Content, summaryEventChars))
			b.WriteByte('\n')
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "call %s(%s)\n", c.Name, cut(string(c.Arguments), summaryEventChars))
		}
		b.WriteString("</EVENT>\n")
	}
	b.WriteString("Now summarize the events using the rules above.")
	return b.String()
}

// previousSummary returns the summary a message holds, if it is one.
func previousSummary(content string) (string, bool) {
	if rest, ok := strings.CutPrefix(content, modelSummaryHeader); ok {
		return rest, true
	}
	if rest, ok := strings.CutPrefix(content, digestSummaryHeader); ok {
		return rest, true
	}
	return "", false
}

// cut shortens s to at most n bytes (on a character boundary), saying how
// much was left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return fmt.Sprintf("%s… [%d more bytes]", s[:i], len(s)-i)
}

// condensed counts a summary call: its usage and cost in the session's,
// and, when the session's own model made it, among its model calls.
func (t *Totals) condensed(e Event, d *ConversationCondensed) {
	if !d.Asked {
		return
	}
	t.Usage = t.Usage.Add(d.Usage)
	t.CostUSD += d.CostUSD
	if d.Model == "" {
		t.InteractionCount++
		t.LastInteractionAt = e.Time
	}
}
