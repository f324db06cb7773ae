package loop

import (
	"fmt"

	"github.com/agentloop/agentloop/prompt"
)

// Texts are the messages the runner writes to the model. Override any of
// them in Config.Texts; nil fields use the defaults from package prompt.
type Texts struct {
	LastIteration  func(n, max int, marker string) string
	BudgetWarning  func(kind string, usedPct int) string
	StuckNudge     func(pattern, detail string) string
	WrapUp         func(reason StopReason) string
	Correction     func(problem string) string
	UnknownOutcome func(toolName string) string
	Continue       func(marker string) string
	PlanContinue   func(plan *Plan) string
}

func (t Texts) withDefaults() Texts {
	if t.LastIteration == nil {
		t.LastIteration = prompt.LastIteration
	}
	if t.BudgetWarning == nil {
		t.BudgetWarning = prompt.BudgetWarning
	}
	if t.StuckNudge == nil {
		t.StuckNudge = prompt.StuckNudge
	}
	if t.WrapUp == nil {
		t.WrapUp = func(reason StopReason) string { return prompt.WrapUp(string(reason)) }
	}
	if t.Correction == nil {
		t.Correction = prompt.Correction
	}
	if t.UnknownOutcome == nil {
		t.UnknownOutcome = prompt.UnknownOutcome
	}
	if t.Continue == nil {
		t.Continue = func(marker string) string {
			return fmt.Sprintf("Continue your reasoning. When you have the final answer, write %s followed by the answer.", marker)
		}
	}
	if t.PlanContinue == nil {
		t.PlanContinue = func(p *Plan) string {
			return "Your plan still has pending steps. Continue with the next step, or update the plan if it no longer applies."
		}
	}
	return t
}
