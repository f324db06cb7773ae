package prompt

// Messages the loop sends to the model when a limit approaches or something
// goes wrong. Each renders a template in templates/messages.tmpl; the
// package functions use the embedded templates, the Builder methods the
// Builder's (possibly overridden) ones.

// LastIterationData is the data of the "last_iteration" template.
type LastIterationData struct {
	N, Max int
	Left   int // Max - N, never negative
	Marker string
}

// BudgetData is the data of the "budget_warning" template.
type BudgetData struct {
	Kind    string // "token", "cost", "tool call", "time"
	UsedPct int
}

// StuckData is the data of the "stuck_nudge" template.
type StuckData struct {
	Pattern string // what repeats: "the same read_file call"
	Detail  string // optional specifics
}

// ReasonData is the data of the "wrap_up" template.
type ReasonData struct{ Reason string }

// ProblemData is the data of the "correction" template.
type ProblemData struct{ Problem string }

// ToolData is the data of the "unknown_outcome" template.
type ToolData struct{ Tool string }

// LastIteration tells the model it is on iteration n of maxIter. On the last
// one (n >= maxIter) it must answer now: with the marker when one is given
// (self-reasoning mode), else without calling tools.
func LastIteration(n, maxIter int, marker string) string {
	return defaultBuilder().LastIteration(n, maxIter, marker)
}

// BudgetWarning tells the model usedPct percent of a budget (kind: "token",
// "cost", …) is spent: at 95% and above it must answer now, below that it
// should head for the finish.
func BudgetWarning(kind string, usedPct int) string {
	return defaultBuilder().BudgetWarning(kind, usedPct)
}

// StuckNudge tells the model it is repeating pattern ("the same
// read_file call") and should try something different.
func StuckNudge(pattern, detail string) string {
	return defaultBuilder().StuckNudge(pattern, detail)
}

// WrapUp asks for a best-effort final answer in a last call without tools,
// because a limit was hit. reason reads as a clause: "the time limit of 30m
// was reached".
func WrapUp(reason string) string { return defaultBuilder().WrapUp(reason) }

// Correction asks the model to resend a malformed tool call; problem says
// what was wrong with it.
func Correction(problem string) string { return defaultBuilder().Correction(problem) }

// UnknownOutcome explains that a non-idempotent tool call was interrupted by
// a crash, may or may not have taken effect, and was not re-run.
func UnknownOutcome(toolName string) string { return defaultBuilder().UnknownOutcome(toolName) }

// LastIteration is the package function LastIteration with b's templates.
func (b *Builder) LastIteration(n, maxIter int, marker string) string {
	return b.message("last_iteration", LastIterationData{N: n, Max: maxIter, Left: max(maxIter-n, 0), Marker: marker})
}

// BudgetWarning is the package function BudgetWarning with b's templates.
func (b *Builder) BudgetWarning(kind string, usedPct int) string {
	if kind == "" {
		kind = "session"
	}
	return b.message("budget_warning", BudgetData{Kind: kind, UsedPct: usedPct})
}

// StuckNudge is the package function StuckNudge with b's templates.
func (b *Builder) StuckNudge(pattern, detail string) string {
	if pattern == "" {
		pattern = "the same steps"
	}
	return b.message("stuck_nudge", StuckData{Pattern: pattern, Detail: detail})
}

// WrapUp is the package function WrapUp with b's templates.
func (b *Builder) WrapUp(reason string) string {
	if reason == "" {
		reason = "a session limit was reached"
	}
	return b.message("wrap_up", ReasonData{Reason: reason})
}

// Correction is the package function Correction with b's templates.
func (b *Builder) Correction(problem string) string {
	return b.message("correction", ProblemData{Problem: problem})
}

// UnknownOutcome is the package function UnknownOutcome with b's templates.
func (b *Builder) UnknownOutcome(toolName string) string {
	return b.message("unknown_outcome", ToolData{Tool: toolName})
}

// messageSamples holds sample data for every message template, for New's
// trial run.
func messageSamples() map[string]any {
	return map[string]any{
		"last_iteration":  LastIterationData{N: 5, Max: 5, Marker: DefaultMarker},
		"budget_warning":  BudgetData{Kind: "token", UsedPct: 80},
		"stuck_nudge":     StuckData{Pattern: "the same call", Detail: "x"},
		"wrap_up":         ReasonData{Reason: "the time limit was reached"},
		"correction":      ProblemData{Problem: "invalid JSON"},
		"unknown_outcome": ToolData{Tool: "execute_command"},
	}
}
