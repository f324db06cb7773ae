package loop

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/agentloop/agentloop/model"
)

// Action is what a stop condition wants.
type Action int

const (
	Continue Action = iota
	// End finishes the session with Reason.
	End
	// Pause stops the session until a person resumes it.
	Pause
)

// Decision is a stop condition's verdict.
type Decision struct {
	Action Action
	Status Status // for End: the final status (default failed, or completed for ReasonCompleted)
	Reason StopReason
	Detail string
}

// StopCondition looks at a session's state before the next model call and
// says continue, end or pause. Now is the runner's clock.
type StopCondition interface {
	Check(s *State, now time.Time) Decision
}

// StopFunc adapts a function to StopCondition.
type StopFunc func(s *State, now time.Time) Decision

// Check calls f.
func (f StopFunc) Check(s *State, now time.Time) Decision { return f(s, now) }

// AnyOf stops when any condition stops; the first one that does decides.
func AnyOf(conds ...StopCondition) StopCondition {
	return StopFunc(func(s *State, now time.Time) Decision {
		for _, c := range conds {
			if d := c.Check(s, now); d.Action != Continue {
				return d
			}
		}
		return Decision{}
	})
}

// AllOf stops only when every condition stops; the first one's decision is
// returned. With no conditions it never stops.
func AllOf(conds ...StopCondition) StopCondition {
	return StopFunc(func(s *State, now time.Time) Decision {
		if len(conds) == 0 {
			return Decision{}
		}
		var first Decision
		for i, c := range conds {
			d := c.Check(s, now)
			if d.Action == Continue {
				return Decision{}
			}
			if i == 0 {
				first = d
			}
		}
		return first
	})
}

func end(reason StopReason, format string, args ...any) Decision {
	return Decision{Action: End, Status: StatusFailed, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// MaxIterations ends the session once n iterations have run.
func MaxIterations(n int) StopCondition {
	return StopFunc(func(s *State, _ time.Time) Decision {
		if s.CurrentIteration >= n && !s.iterationOpen() {
			return end(ReasonMaxIterations, "reached the limit of %d iterations", n)
		}
		return Decision{}
	})
}

// Timeout ends the session once d has passed since it started.
func Timeout(d time.Duration) StopCondition {
	return StopFunc(func(s *State, now time.Time) Decision {
		if d > 0 && !s.StartedAt.IsZero() && now.Sub(s.StartedAt) >= d {
			return end(ReasonTimeout, "ran for %s, over the %s limit", now.Sub(s.StartedAt).Round(time.Millisecond), d)
		}
		return Decision{}
	})
}

// BudgetTokens ends the session once the budget is used up or the next
// call, by State.NextCallEstimate, would pass it. A runner's own budgets
// (Limits.BudgetTokens) are checked more strictly, against the request
// about to be sent: see CallEstimate.
func BudgetTokens(budget int) StopCondition {
	return StopFunc(func(s *State, _ time.Time) Decision {
		if budget <= 0 {
			return Decision{}
		}
		used := s.Usage.Total()
		next := s.NextCallEstimate()
		if used >= budget || used+next > budget {
			return end(ReasonBudgetTokens, "used %d of %d tokens; the next call needs about %d", used, budget, next)
		}
		return Decision{}
	})
}

// BudgetCost ends the session once the budget in USD is spent or the next
// call, at the average cost of the calls so far, would pass it. A runner's
// own budget (Limits.BudgetUSD) is checked more strictly, against the
// request about to be sent, first call included: see CallEstimate.
func BudgetCost(budgetUSD float64) StopCondition {
	return StopFunc(func(s *State, _ time.Time) Decision {
		if budgetUSD <= 0 {
			return Decision{}
		}
		next := 0.0
		if s.InteractionCount > 0 {
			next = s.CostUSD / float64(s.InteractionCount) // average call so far
		}
		if s.CostUSD >= budgetUSD || s.CostUSD+next > budgetUSD {
			return end(ReasonBudgetCost, "spent %s of %s; the next call costs about %s", usd(s.CostUSD), usd(budgetUSD), usd(next))
		}
		return Decision{}
	})
}

// DefaultMaxOutputTokens is the output a call asks for at most (the
// request's max tokens) under a token or cost budget, when
// Limits.MaxOutputTokens does not say.
const DefaultMaxOutputTokens = 4096

// CallEstimate is the most the next model call can spend: its input (the
// request as it will be sent, counted by the runner's tokenizer), the
// output it asks for at most (sent as the request's max tokens) and the
// cost of both at the model's prices (zero when they are unknown).
type CallEstimate struct {
	InputTokens  int
	OutputTokens int
	CostUSD      float64
}

// outputCap is the max tokens a call asks for: zero (the provider's
// default) without a budget.
func (l Limits) outputCap() int {
	if l.BudgetTokens <= 0 && l.BudgetUSD <= 0 {
		return l.MaxOutputTokens
	}
	if l.MaxOutputTokens > 0 {
		return l.MaxOutputTokens
	}
	return DefaultMaxOutputTokens
}

// budgets refuses a call that could pass a budget: what was spent plus the
// most the call can spend. The first call is no exception.
func budgets(st *State, next CallEstimate) Decision {
	l := st.Limits
	if l.BudgetTokens > 0 {
		used, call := st.Usage.Total(), next.InputTokens+next.OutputTokens
		if used+call > l.BudgetTokens {
			return end(ReasonBudgetTokens, "used %d of %d tokens; the next call could take %d more (%d in, up to %d out)",
				used, l.BudgetTokens, call, next.InputTokens, next.OutputTokens)
		}
	}
	if l.BudgetUSD > 0 && st.CostUSD+next.CostUSD > l.BudgetUSD {
		return end(ReasonBudgetCost, "spent %s of %s; the next call could cost %s more (%d input tokens, up to %d output tokens)",
			usd(st.CostUSD), usd(l.BudgetUSD), usd(next.CostUSD), next.InputTokens, next.OutputTokens)
	}
	return Decision{}
}

// usd formats dollars with enough digits for small budgets: $0.00036.
func usd(v float64) string {
	return "$" + strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// BudgetToolCalls ends the session once n tool calls have run.
func BudgetToolCalls(n int) StopCondition {
	return StopFunc(func(s *State, _ time.Time) Decision {
		if n > 0 && s.ToolCallCount >= n {
			return end(ReasonBudgetToolCalls, "made %d tool calls, the budget is %d", s.ToolCallCount, n)
		}
		return Decision{}
	})
}

// NoProgress ends the session when the workspace has not changed for n
// iterations (tools report changes through tool.ReportModification).
func NoProgress(n int) StopCondition {
	return StopFunc(func(s *State, _ time.Time) Decision {
		if n > 0 && !s.iterationOpen() && s.CurrentIteration-s.LastModifiedIteration >= n {
			return end(ReasonNoProgress, "no workspace change in the last %d iterations", n)
		}
		return Decision{}
	})
}

// builtinConditions are the conditions every session has, from its
// limits. The budgets are not among them: they need the request about to
// be sent (see budgets).
func builtinConditions(l Limits) StopCondition {
	conds := []StopCondition{
		MaxIterations(l.maxIterations()),
		Timeout(l.Timeout.Std()),
		BudgetToolCalls(l.BudgetToolCalls),
	}
	if l.NoProgressAfter > 0 {
		conds = append(conds, NoProgress(l.NoProgressAfter))
	}
	return AnyOf(conds...)
}

// NextCallEstimate is a rough token count of the next model call: the
// last call's input and output (a call resends the conversation), what was
// added since (4 bytes a token), and the largest output so far.
func (s *State) NextCallEstimate() int {
	added := 0
	conv := s.Conversation
	i := len(conv) - 1
	for ; i >= 0 && conv[i].Role != model.RoleAssistant; i-- {
		added += len(conv[i].Content) + 16
	}
	if i < 0 { // no call yet: the whole conversation is new
		return added/4 + s.maxOutput()
	}
	var last model.Usage
	for j := len(s.Iterations) - 1; j >= 0; j-- {
		if u := s.Iterations[j].Usage; u != (model.Usage{}) {
			last = u
			break
		}
	}
	return last.InputTokens + last.OutputTokens + added/4 + s.maxOutput()
}

func (s *State) maxOutput() int {
	m := 0
	for _, it := range s.Iterations {
		m = max(m, it.Usage.OutputTokens)
	}
	return m
}

// iterationOpen reports whether the current iteration has not ended.
func (s *State) iterationOpen() bool {
	it := s.current()
	return it != nil && it.Status == IterationInProgress
}
