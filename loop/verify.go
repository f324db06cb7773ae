package loop

import (
	"context"
	"fmt"
	"strings"
)

// Verifier checks the workspace when the model says it is done and when a
// limit ends the session (seed 004): typically the project's tests.
type Verifier interface {
	Verify(ctx context.Context, st *State) []VerifyCheck
}

// VerifyCheck is the result of one verification command.
type VerifyCheck struct {
	Name       string `json:"name"`
	Passed     bool   `json:"passed"`
	Output     string `json:"output,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Verification outcomes.
const (
	VerifyPass        = "pass"
	VerifyPartialPass = "partial_pass"
	VerifyFail        = "fail"
)

// VerificationFinished records a verification run.
type VerificationFinished struct {
	// Trigger is "completion" (the model said it was done) or "limit".
	Trigger string        `json:"trigger"`
	Outcome string        `json:"outcome"`
	Checks  []VerifyCheck `json:"checks"`
}

// EventType implements Payload.
func (*VerificationFinished) EventType() EventType { return TypeVerificationFinished }

// TypeVerificationFinished is the event of a verification run.
const TypeVerificationFinished EventType = "verification.finished"

// ReasonVerificationFailed ends a session whose model claimed completion
// but whose verification still failed when no iterations were left.
const ReasonVerificationFailed StopReason = "verification_failed"

func outcome(checks []VerifyCheck) string {
	passed := 0
	for _, c := range checks {
		if c.Passed {
			passed++
		}
	}
	switch {
	case passed == len(checks):
		return VerifyPass
	case passed > 0:
		return VerifyPartialPass
	}
	return VerifyFail
}

// verify runs the verifier, records the outcome and returns it ("" when
// there is no verifier).
func (s *Session) verify(ctx context.Context, trigger string) string {
	v := s.env.Verifier
	if v == nil {
		return ""
	}
	checks := v.Verify(ctx, s.state)
	if len(checks) == 0 {
		return ""
	}
	out := outcome(checks)
	s.emit(&VerificationFinished{Trigger: trigger, Outcome: out, Checks: checks})
	return out
}

// verificationFeedback tells the model which checks failed.
func verificationFeedback(checks []VerifyCheck) string {
	var b strings.Builder
	b.WriteString("You said the task is done, but verification failed:\n")
	for _, c := range checks {
		if c.Passed {
			fmt.Fprintf(&b, "\n✓ %s passed", c.Name)
			continue
		}
		out := c.Output
		if len(out) > 4000 {
			out = out[:2000] + "\n[…]\n" + out[len(out)-2000:]
		}
		fmt.Fprintf(&b, "\n✗ %s failed:\n%s\n", c.Name, out)
	}
	b.WriteString("\nFix the failures, then give your final answer again.")
	return b.String()
}
