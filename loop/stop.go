package loop

import (
	"fmt"
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

// BudgetTokens ends the session before a call that would pass the budget.
// The next call is estimated to cost at least what the conversation holds
// now (a call resends it) plus the largest output seen so far.
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

// BudgetCost ends the session before a call that would pass the budget in USD.
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
			return end(ReasonBudgetCost, "spent $%.4f of $%.4f; the next call costs about $%.4f", s.CostUSD, budgetUSD, next)
		}
		return Decision{}
	})
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

// builtinConditions are the conditions every session has, from its limits.
func builtinConditions(l Limits) StopCondition {
	conds := []StopCondition{
		MaxIterations(l.maxIterations()),
		Timeout(l.Timeout),
		BudgetTokens(l.BudgetTokens),
		BudgetCost(l.BudgetUSD),
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
