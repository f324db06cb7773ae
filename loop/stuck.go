package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Stuck patterns, as recorded in stuck.detected events.
const (
	PatternRepeatedPair     = "repeated_action_observation" // 4 identical action+observation pairs
	PatternRepeatedError    = "repeated_action_error"       // 3 identical actions that each error
	PatternRepeatedMessage  = "repeated_message"            // 3 identical assistant messages, no tools
	PatternAlternation      = "alternation"                 // A,B,A,B,A,B
	PatternFailedIterations = "failed_iterations"           // 3 consecutive failed iterations
	PatternSameCall         = "same_call"                   // same tool + same arguments 3 times in a row
)

// step is one iteration reduced to what repetition detection compares.
type step struct {
	action      string // tool calls (name + compact args), or "" for a text reply
	observation string // tool outputs
	text        string // assistant text when there were no tool calls
	allErrors   bool
	failed      bool
	corrected   bool
}

// stepOf reduces a finished iteration to what repetition detection compares.
func stepOf(it *Iteration) step {
	var act, obs strings.Builder
	errs := 0
	for _, c := range it.ToolCalls {
		act.WriteString(c.Name)
		act.WriteByte('(')
		act.Write(compactJSON(c.Input))
		act.WriteString(");")
		obs.WriteString(c.Output)
		obs.WriteByte(0)
		if c.Status == ToolError {
			errs++
		}
	}
	st := step{
		action:      act.String(),
		observation: obs.String(),
		allErrors:   len(it.ToolCalls) > 0 && errs == len(it.ToolCalls),
		failed:      it.Status == IterationFailed,
		corrected:   it.Correction,
	}
	if len(it.ToolCalls) == 0 {
		for _, m := range it.Messages {
			if m.Role == "assistant" {
				st.text = m.Content
			}
		}
	}
	return st
}

// recentSteps is how many finished iterations the state keeps reduced: the
// longest pattern spans 6.
const recentSteps = 6

func (s *State) steps() []step { return s.recent }

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

// DetectStuck looks for the repetition patterns OpenHands uses, plus
// seed 000's consecutive failed iterations and seed 004's repeated call.
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
	sameAction := func(a, b step) bool { return a.action != "" && a.action == b.action }
	samePair := func(a, b step) bool { return sameAction(a, b) && a.observation == b.observation }

	if xs := last(4); same(xs, samePair) {
		return PatternRepeatedPair, fmt.Sprintf("the same call %s with the same result 4 times", short(xs[0].action)), ReasonStuck, true
	}
	if xs := last(3); same(xs, sameAction) {
		errs := true
		for _, x := range xs {
			errs = errs && x.allErrors
		}
		if errs {
			return PatternRepeatedError, fmt.Sprintf("the call %s failed 3 times in a row", short(xs[0].action)), ReasonStuck, true
		}
		return PatternSameCall, fmt.Sprintf("the call %s 3 times in a row", short(xs[0].action)), ReasonRepetition, true
	}
	if xs := last(3); same(xs, func(a, b step) bool { return a.action == "" && b.action == "" && a.text != "" && a.text == b.text }) {
		return PatternRepeatedMessage, fmt.Sprintf("the same reply %q 3 times", short(xs[0].text)), ReasonStuck, true
	}
	if xs := last(6); xs != nil && !samePair(xs[0], xs[1]) && xs[0].action != "" && xs[1].action != "" {
		alt := true
		for i := 2; i < 6; i++ {
			alt = alt && samePair(xs[i], xs[i-2])
		}
		if alt {
			return PatternAlternation, fmt.Sprintf("alternating between %s and %s", short(xs[0].action), short(xs[1].action)), ReasonStuck, true
		}
	}
	if xs := last(3); xs != nil {
		failed := true
		for _, x := range xs {
			failed = failed && (x.failed || x.allErrors)
		}
		if failed {
			return PatternFailedIterations, "3 iterations in a row failed", ReasonStuck, true
		}
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
func isCompact(b []byte) bool {
	inStr, esc := false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			return false
		}
	}
	return true
}
