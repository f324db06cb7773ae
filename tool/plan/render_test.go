package plan_test

import (
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/tokens"
	"github.com/agentloop/agentloop/tool/plan"
)

func fivePlan(statuses ...string) *loop.Plan {
	titles := []string{
		"Read the failing test and the code it covers",
		"Reproduce the failure with go test -run TestRetry",
		"Fix the race in the retry loop",
		"Run the whole test suite with the race detector",
		"Summarise the change for the user",
	}
	p := &loop.Plan{Goal: "Fix the flaky TestRetry test in the HTTP client package", Status: "active"}
	for i, t := range titles {
		p.Steps = append(p.Steps, loop.PlanStep{Title: t, Status: loop.StepStatus(statuses[i])})
	}
	return p
}

func TestContext(t *testing.T) {
	tests := []struct {
		name string
		plan *loop.Plan
		want string
	}{
		{"no plan", nil, ""},
		{"in progress", fivePlan("completed", "completed", "in_progress", "pending", "pending"),
			"Plan (executing, 2 of 5 steps finished): Fix the flaky TestRetry test in the HTTP client package. Current step 3: Fix the race in the retry loop (in_progress)."},
		{"next pending", fivePlan("completed", "skipped", "pending", "pending", "pending"),
			"Plan (executing, 2 of 5 steps finished): Fix the flaky TestRetry test in the HTTP client package. Next step 3: Fix the race in the retry loop (pending)."},
		{"all finished", fivePlan("completed", "completed", "completed", "failed", "skipped"),
			"Plan (executing, 5 of 5 steps finished): Fix the flaky TestRetry test in the HTTP client package. All steps are finished: complete the plan with update_plan."},
		{"completed", func() *loop.Plan {
			p := fivePlan("completed", "completed", "completed", "completed", "completed")
			p.Status = "completed"
			return p
		}(), "Plan (completed, 5 of 5 steps finished): Fix the flaky TestRetry test in the HTTP client package."},
		{"long goal and step", &loop.Plan{Goal: "Refactor the whole storage layer so that every backend passes one conformance suite and nothing else changes", Status: "active",
			Steps: []loop.PlanStep{{Title: "Write down, for each of the three backends, every place where behaviour differs from the others today", Status: "in_progress"}}},
			"Plan (executing, 0 of 1 steps finished): Refactor the whole storage layer so that every backend passes one conformance… Current step 1: Write down, for each of the three backends, every place where behaviour… (in_progress)."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := plan.Context(&loop.State{PlanState: loop.PlanState{Plan: tc.plan}})
			if got != tc.want {
				t.Errorf("Context:\n got %q\nwant %q", got, tc.want)
			}
			n := tokens.Count(tokens.CL100K, got)
			t.Logf("%d tokens", n)
			if n > 60 {
				t.Errorf("Context is %d tokens, want at most 60: %q", n, got)
			}
		})
	}
	if plan.Context(nil) != "" {
		t.Error("Context(nil) should be empty")
	}
}
