package loop

import "fmt"

// Texts are the messages the runner writes to the model. Override any of
// them in Config.Texts; nil fields use the defaults.
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
		t.LastIteration = func(n, max int, marker string) string {
			if marker != "" {
				return fmt.Sprintf("IMPORTANT: This is iteration %d of %d maximum. You MUST give your final answer in this response, starting with %s", n, max, marker)
			}
			return fmt.Sprintf("IMPORTANT: This is iteration %d of %d maximum. Give your final answer now, without calling tools.", n, max)
		}
	}
	if t.BudgetWarning == nil {
		t.BudgetWarning = func(kind string, pct int) string {
			if pct >= 95 {
				return fmt.Sprintf("IMPORTANT: %d%% of the %s budget is used. Finish now: give your final answer in this response.", pct, kind)
			}
			return fmt.Sprintf("Note: %d%% of the %s budget is used. Work toward your final answer.", pct, kind)
		}
	}
	if t.StuckNudge == nil {
		t.StuckNudge = func(pattern, detail string) string {
			return fmt.Sprintf("You are repeating yourself: %s. That is not making progress; try something different, or give your final answer.", detail)
		}
	}
	if t.WrapUp == nil {
		t.WrapUp = func(reason StopReason) string {
			return fmt.Sprintf("The session has hit a limit (%s) and must stop now. Without calling any tools, give your best final answer: what you did, what you found, and what remains.", reason)
		}
	}
	if t.Correction == nil {
		t.Correction = func(problem string) string {
			return "Your last reply looked like a tool call but could not be read: " + problem + " Send the tool call again in the correct format, or answer in plain text if you are done."
		}
	}
	if t.UnknownOutcome == nil {
		t.UnknownOutcome = func(name string) string {
			return fmt.Sprintf("The outcome of this %s call is unknown: the process stopped while it was running, and the tool cannot safely be re-run. Check its effects before relying on them or repeating it.", name)
		}
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
