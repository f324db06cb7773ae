package loop

import (
	"regexp"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// Outcomes of a final reply that are not a completed answer.
const (
	// ReasonModelGaveUp: the model said it cannot do the task (final_answer
	// with success false, or a clear admission in its final reply); the
	// session waits for a person.
	ReasonModelGaveUp StopReason = "model_gave_up"
	// ReasonTruncated: replies kept being cut off by the token limit.
	ReasonTruncated StopReason = "truncated"
	// ReasonPlanFailed: the model failed its plan and then answered.
	ReasonPlanFailed StopReason = "plan_failed"
	// ReasonMalformedToolCall: a tool call could not be read even after
	// the one correction request.
	ReasonMalformedToolCall StopReason = "malformed_tool_call"
	// ReasonEmptyReply: the model sent nothing (no text, no call) twice.
	ReasonEmptyReply StopReason = "empty_reply"
)

// Messages the runner adds for replies that are not answers.
const (
	KindTruncated  MessageKind = "truncated"   // the reply hit the token limit
	KindEmptyReply MessageKind = "empty_reply" // the reply was empty
)

// planFailed reports whether the model gave up its plan (update_plan
// fail); its next answer ends the session as failed.
func (s *State) planFailed() bool { return s.Plan != nil && s.Plan.Status == PlanFailed }

// maxTruncatedContinuations is how many times in a row a reply cut off by
// the token limit is continued before the session fails.
const maxTruncatedContinuations = 2

// trailingKind counts the iterations in a row, ending with the one before
// the current, that added a message of kind k.
func (s *State) trailingKind(k MessageKind) int {
	n := 0
	for i := len(s.Iterations) - 2; i >= 0; i-- {
		if !hasKind(&s.Iterations[i], k) {
			break
		}
		n++
	}
	return n
}

func hasKind(it *Iteration, k MessageKind) bool {
	for _, m := range it.Messages {
		if m.Kind == k {
			return true
		}
	}
	return false
}

// continuedText joins the text of the replies cut off by the token limit
// just before the current one to text, so an answer the model had to
// continue is recorded whole.
func (s *State) continuedText(text string) string {
	n := s.trailingKind(KindTruncated)
	if n == 0 {
		return text
	}
	var b strings.Builder
	for _, it := range s.Iterations[len(s.Iterations)-1-n : len(s.Iterations)-1] {
		for _, m := range it.Messages {
			if m.Role == model.RoleAssistant {
				b.WriteString(m.Content)
			}
		}
	}
	b.WriteString(text)
	return b.String()
}

// AdmitsFailure reports whether a final reply clearly says the task could
// not be done: a first-person "I am unable to / I could not / I failed to /
// I give up …" in a sentence that does not go on to say it managed after
// all, and is not about failing to find a problem ("I cannot find any bug,
// the code is fine", "unable to reproduce: the tests pass").
func AdmitsFailure(text string) bool {
	// Lower-casing maps rune by rune and sentences end at ASCII
	// punctuation and spaces, which it leaves alone: the sentences of the
	// lower-cased text are the lower-cased sentences.
	lower := strings.ToLower(stripCode(text))
	if !mentionsInability(lower) {
		return false
	}
	for _, s := range sentences(lower) {
		loc := inability.FindStringIndex(s)
		if loc == nil {
			continue
		}
		rest := s[loc[1]:]
		if noProblemFound.MatchString(rest) || contrast.MatchString(s) {
			continue
		}
		return true
	}
	return false
}

var (
	// inability is a first-person statement that something could not be
	// done.
	inability = regexp.MustCompile(`\b(?:i|we)\s+(?:wasn't|weren't|am not|'m not)\s+able\s+to|\b(?:i|we)(?:'m| am| was| were| are|'ve| have)?\s+(?:(?:still\s+|simply\s+|really\s+)?(?:unable|not able)\s+to|(?:can ?not|can't|could ?not|couldn't|did not manage|didn't manage|failed)\s+(?:to\s+)?|give up|gave up)|\b(?:unable|not possible|impossible)\s+(?:for me\s+)?to\s+(?:complete|finish|fix|do|accomplish|carry out|perform)\b|\bbeyond my (?:capabilities|abilities|ability)\b|\bi (?:do not|don't) have (?:access|the ability|permission)\b`)
	// noProblemFound is what follows an "I could not" that reports a
	// clean result rather than a failure.
	noProblemFound = regexp.MustCompile(`^\s*(?:find|see|spot|identify|detect|locate|discover|reproduce|notice)\b(?:\s+(?:any|a|the|an)\b)?[^.]*?\b(?:bugs?|issues?|problems?|errors?|anything wrong|fault|defects?|it|failures?|regressions?|vulnerabilit(?:y|ies)|reason to change)\b|^\s*(?:reproduce(?:\s*$|\s*[:,]|\s+(?:it|the|this|that)\b[^.]*$)|see anything|find anything)|^\s*(?:stress|emphasi[sz]e|overstate|thank|help but|wait)\b`)
	// contrast is a turn in the same sentence to having managed after all.
	contrast    = regexp.MustCompile(`\b(?:but|however|so|instead|then|and)\b[^.]*\b(?:i|we)\s+(?:then\s+|eventually\s+|finally\s+|instead\s+)?(?:fixed|solved|resolved|managed|found|completed|did|worked around|was able|were able|got|created|added|wrote|used|made|changed|updated|installed|implemented|replaced|switched|ran|set up|generated)\b|\bat first\b|\binitially\b|\buntil\b`)
	sentenceEnd = regexp.MustCompile(`[.!?;]\s+|\n+`)
)

func sentences(text string) []string { return sentenceEnd.Split(text, -1) }

// inabilityWords holds a word of each alternative of inability: "able"
// (unable, not able, wasn't able), "can" (cannot, can't), "could",
// "manage" (didn't manage), "fail" (failed), "ve up" (give up, gave up),
// "possible" (impossible, not possible), "beyond" (beyond my abilities),
// "have" (don't have access). Any match of inability contains one.
var inabilityWords = []string{"able", "can", "could", "manage", "fail", "ve up", "possible", "beyond", "have"}

// mentionsInability reports whether lower, a lower-cased text, has one of
// inabilityWords: without one, no sentence of it can match inability, and
// the sentence-by-sentence search (most of the cost of judging a final
// answer, 12 µs on a one-line one) is skipped.
func mentionsInability(lower string) bool {
	for _, w := range inabilityWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// stripCode drops fenced code blocks and inline code: an error message
// quoted there ("cannot open file") is not the model speaking.
func stripCode(text string) string {
	for {
		i := strings.Index(text, "```")
		if i < 0 {
			break
		}
		j := strings.Index(text[i+3:], "```")
		if j < 0 {
			text = text[:i]
			break
		}
		text = text[:i] + "\n" + text[i+3+j+3:]
	}
	var b strings.Builder
	in := false
	for _, r := range text {
		if r == '`' {
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}
