package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Stuck patterns, as recorded in stuck.detected events. They are for the
// log and for people reading it; the model is told in plain words
// (StuckDescription).
const (
	PatternRepeatedPair     = "repeated_action_observation" // same call, same result, 4 times (StuckRepeats)
	PatternRepeatedError    = "repeated_action_error"       // same call, same error result, 3 times (StuckErrorRepeats)
	PatternRepeatedMessage  = "repeated_message"            // the same reply text 3 times, no tools
	PatternEmptyReplies     = "empty_replies"               // 3 replies with no text and no tool call
	PatternAlternation      = "alternation"                 // A,B,A,B,A,B with the same results
	PatternFailedIterations = "failed_iterations"           // 3 iterations in a row whose model call or every tool call failed to run
)

// StuckDescription says in plain words what a pattern means, for the
// message that tells the model.
func StuckDescription(pattern string) string {
	switch pattern {
	case PatternRepeatedPair:
		return "the same tool call and getting the same result"
	case PatternRepeatedError:
		return "the same tool call and getting the same error"
	case PatternRepeatedMessage:
		return "the same reply"
	case PatternEmptyReplies:
		return "empty replies"
	case PatternAlternation:
		return "the same two tool calls back and forth"
	case PatternFailedIterations:
		return "steps that fail"
	case PatternCondensationLoop:
		return "condensing the conversation without it fitting"
	}
	return "the same steps"
}

// step is one iteration reduced to what repetition detection compares:
// what the model was shown, not the record's other fields (call ids,
// durations, the files a call changed), and with the identifiers that
// differ on every run masked (see shown).
type step struct {
	action      string // tool calls (name + canonical args), or "" for a text reply
	observation string // tool results as the model saw them
	text        string // assistant text when there were no tool calls
	errorResult bool   // every call's result reports an error (a non-zero exit counts)
	failed      bool   // the model call failed, or no call could run
	empty       bool   // a reply with no text and no tool call
}

// stepOf reduces a finished iteration to what repetition detection compares.
func stepOf(it *Iteration) step {
	var act, obs strings.Builder
	errs, failures := 0, 0
	for _, c := range it.ToolCalls {
		act.WriteString(c.Name)
		act.WriteByte('(')
		act.Write(canonicalJSON(c.Input))
		act.WriteString(");")
		obs.WriteString(shown(c))
		obs.WriteByte(0)
		if c.Status == ToolError {
			errs++
		}
		if c.Failed {
			failures++
		}
	}
	n := len(it.ToolCalls)
	st := step{
		action:      act.String(),
		observation: obs.String(),
		errorResult: n > 0 && errs == n,
		failed:      (it.Status == IterationFailed && n == 0) || (n > 0 && failures == n),
	}
	if n == 0 {
		for _, m := range it.Messages {
			if m.Role == "assistant" {
				st.text = m.Content
			}
		}
		st.empty = it.Responded && strings.TrimSpace(st.text) == ""
	}
	return st
}

// shown is a call's result as repetition detection compares it: the text
// the model was shown (with whether it was marked an error), with the
// identifiers that change on every run even when nothing else does
// masked — timestamps, durations, process ids, addresses, UUIDs and long
// hexadecimal ids. Line numbers stay: a compiler error moving from line 3
// to line 7 is progress. The result of a call the tool could not do (a
// refusal, invalid arguments, a crash) has every number masked: it is the
// tool's own message, whose numbers are positions and ids in the request,
// and the same refusal is the same however they vary.
func shown(c ToolCallRecord) string {
	out := c.Output
	if c.Status == ToolError {
		out = "error: " + out
	}
	return maskVolatile(out, c.Failed)
}

// recentCap is how many finished iterations the state keeps reduced: the
// longest pattern, alternation, spans 6.
func recentCap(l Limits) int {
	e, r := l.StuckThresholds()
	return max(6, e, r)
}

// CondensationLoop is how many condensations in a row, with no model reply
// between them, mean the session is stuck: condensing does not make the
// conversation fit, and each try only condenses again.
const CondensationLoop = 10

// PatternCondensationLoop: CondensationLoop condensations in a row.
const PatternCondensationLoop = "condensation_loop"

// watchForStuck folds e into what stuck detection looks at: the finished
// iterations since a person last wrote, and the condensations since the
// model last replied. With Limits.StuckHeadless a person's message starts
// no new window: in an unattended run messages come from automation
// (a "please continue"), and a loop around them is still a loop.
func (p *Progress) watchForStuck(e Event, it *Iteration, l Limits) {
	switch d := e.Data.(type) {
	case *MessageAdded:
		if d.Kind == KindUser && !l.StuckHeadless {
			p.recentFrom = len(p.stepLog) // a person spoke: repetition before it no longer counts
			p.condensedInRow = 0
		}
	case *ModelResponded:
		p.condensedInRow = 0
	case *ConversationCondensed:
		p.condensedInRow++
	case *IterationEnded:
		if it != nil && it.N == d.N {
			p.stepLog = append(p.stepLog, stepOf(it))
		}
	}
}

// steps are the reduced iterations stuck detection looks at: the last
// recentCap since a person last wrote.
func (s *State) steps() []step {
	st := s.stepLog[s.recentFrom:]
	if n := recentCap(s.Limits); len(st) > n {
		st = st[len(st)-n:]
	}
	return st
}

func compactJSON(b json.RawMessage) []byte {
	if isCompact(b) {
		return b
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// DetectStuck looks at the iterations since the person last wrote (since
// the start, with Limits.StuckHeadless) for repetition a careful person
// would call stuck: the same call with the same result (a changing result
// is progress), the same reply, empty replies, two calls back and forth,
// steps that keep failing to run, or condensing again and again with no
// model reply between.
// It returns the pattern, a description for the model and the reason to
// stop with, or ok=false.
func (s *State) DetectStuck() (pattern, detail string, reason StopReason, ok bool) {
	st := s.steps()
	n := len(st)
	last := func(k int) []step {
		if n < k {
			return nil
		}
		return st[n-k:]
	}
	same := func(xs []step, eq func(a, b step) bool) bool {
		if len(xs) == 0 {
			return false
		}
		for _, x := range xs[1:] {
			if !eq(xs[0], x) {
				return false
			}
		}
		return true
	}
	samePair := func(a, b step) bool { return a.action != "" && a.action == b.action && a.observation == b.observation }
	errorRepeats, repeats := s.Limits.StuckThresholds()

	if s.condensedInRow >= CondensationLoop {
		return PatternCondensationLoop, fmt.Sprintf("the conversation was condensed %d times in a row without a model reply between", s.condensedInRow), ReasonStuck, true
	}

	if xs := last(errorRepeats); same(xs, samePair) && xs[0].errorResult {
		return PatternRepeatedError, fmt.Sprintf("the call %s gave the same error %d times in a row", short(xs[0].action), errorRepeats), ReasonStuck, true
	}
	if xs := last(repeats); same(xs, samePair) {
		return PatternRepeatedPair, fmt.Sprintf("the call %s gave the same result %d times in a row", short(xs[0].action), repeats), ReasonStuck, true
	}
	if xs := last(3); same(xs, func(a, b step) bool { return a.action == "" && b.action == "" && a.text != "" && a.text == b.text }) {
		return PatternRepeatedMessage, fmt.Sprintf("the reply %q 3 times in a row", short(xs[0].text)), ReasonStuck, true
	}
	if xs := last(3); same(xs, func(a, b step) bool { return a.empty && b.empty }) {
		return PatternEmptyReplies, "3 replies in a row had no text and no tool call", ReasonStuck, true
	}
	if xs := last(6); xs != nil && !samePair(xs[0], xs[1]) && xs[0].action != "" && xs[1].action != "" {
		alt := true
		for i := 2; i < 6; i++ {
			alt = alt && samePair(xs[i], xs[i-2])
		}
		if alt {
			return PatternAlternation, fmt.Sprintf("alternating between %s and %s with the same results", short(xs[0].action), short(xs[1].action)), ReasonStuck, true
		}
	}
	if xs := last(3); same(xs, func(a, b step) bool { return a.failed && b.failed }) {
		return PatternFailedIterations, "3 steps in a row failed to run", ReasonStuck, true
	}
	return "", "", "", false
}

func short(s string) string {
	s = strings.TrimSuffix(s, ";")
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// isCompact reports whether b has no whitespace outside strings (the usual
// case for model output), so it need not be re-encoded.
func isCompact(b []byte) bool { return compactScan(b, false) }

// compactScan is isCompact; with escaping set it also reports false for
// the characters json.Marshal escapes in raw JSON (<, >, & and the 0xE2
// that leads U+2028 and U+2029), for a value it would write as it is.
func compactScan(b []byte, escaping bool) bool {
	inStr := false
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			inStr = !inStr
		case '\\':
			if inStr {
				i++ // the escaped byte cannot end the string
			}
		case ' ', '\n', '\t', '\r':
			if !inStr {
				return false
			}
		case '<', '>', '&', 0xE2:
			if escaping {
				return false
			}
		}
	}
	return true
}
