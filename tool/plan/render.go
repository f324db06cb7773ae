package plan

import (
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/loop"
)

// Lengths at which Context shortens the goal and the current step, so the
// line stays small whatever the model wrote.
const (
	contextGoalRunes = 80
	contextStepRunes = 80
)

// Context is one short line about the session's plan for the model's next
// request: its status, how many steps are finished, and the step to work
// on. It is "" when the session has no plan.
//
//	Plan (active, 2 of 5 steps finished): Fix the flaky test. Current step 3: Run the tests (in_progress).
func Context(st *loop.State) string {
	if st == nil {
		return ""
	}
	return Summary(st.Plan)
}

// Summary is Context for a plan; "" for nil.
func Summary(p *loop.Plan) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Plan (%s, %d of %d steps finished): %s", status(p), finished(p), len(p.Steps), sentence(shorten(p.Goal, contextGoalRunes)))
	if !p.Status.Open() {
		return b.String()
	}
	n, s, ok := current(p)
	switch {
	case !ok:
		b.WriteString(" All steps are finished: complete the plan with update_plan.")
	case stepStatus(s) == StepInProgress:
		fmt.Fprintf(&b, " Current step %d: %s (in_progress).", n, strings.TrimRight(shorten(s.Title, contextStepRunes), "."))
	default:
		fmt.Fprintf(&b, " Next step %d: %s (pending).", n, strings.TrimRight(shorten(s.Title, contextStepRunes), "."))
	}
	return b.String()
}

// Render shows a whole plan, one line per step, as update_plan returns it.
//
//	Plan (active, 1 of 3 steps finished): Fix the flaky test.
//	1. [completed] Find the test (TestRetry in retry_test.go)
//	2. [in_progress] Fix the race
//	3. [pending] Run the tests
func Render(p *loop.Plan) string {
	if p == nil {
		return "No plan."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Plan (%s, %d of %d steps finished): %s", status(p), finished(p), len(p.Steps), sentence(p.Goal))
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "\n%d. [%s] %s", i+1, stepStatus(s), s.Title)
		if s.Result != "" {
			fmt.Fprintf(&b, " (%s)", s.Result)
		}
	}
	return b.String()
}

// current is the first step in progress, else the first pending one.
func current(p *loop.Plan) (int, loop.PlanStep, bool) {
	for i, s := range p.Steps {
		if s.Status == StepInProgress {
			return i + 1, s, true
		}
	}
	for i, s := range p.Steps {
		if !done(s.Status) {
			return i + 1, s, true
		}
	}
	return 0, loop.PlanStep{}, false
}

func finished(p *loop.Plan) int {
	n := 0
	for _, s := range p.Steps {
		if done(s.Status) {
			n++
		}
	}
	return n
}

func status(p *loop.Plan) loop.PlanStatus {
	if p.Status == "" || p.Status == loop.PlanActive {
		return StatusExecuting
	}
	return p.Status
}

// sentence ends s with a full stop unless it already ends a sentence.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "…") {
		return s
	}
	return s + "."
}

// shorten cuts s to at most n runes, on a word boundary when one is near.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n-1])
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)*2/3 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.") + "…"
}
