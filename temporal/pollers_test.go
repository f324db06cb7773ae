package temporal

import (
	"testing"

	"go.temporal.io/sdk/worker"
)

// A worker whose options say nothing about polling gets pollers that
// scale, so that every part of a task queue the server splits is polled;
// what the options do say is kept.
func TestWorkersPollWithScalingPollers(t *testing.T) {
	got := scalingPollers(worker.Options{MaxConcurrentActivityExecutionSize: 7})
	if got.WorkflowTaskPollerBehavior == nil || got.ActivityTaskPollerBehavior == nil || got.MaxConcurrentActivityExecutionSize != 7 {
		t.Fatalf("defaults: %+v", got)
	}
	fixed := worker.NewPollerBehaviorSimpleMaximum(worker.PollerBehaviorSimpleMaximumOptions{MaximumNumberOfPollers: 3})
	got = scalingPollers(worker.Options{MaxConcurrentWorkflowTaskPollers: 4, ActivityTaskPollerBehavior: fixed})
	if got.WorkflowTaskPollerBehavior != nil || got.MaxConcurrentWorkflowTaskPollers != 4 || got.ActivityTaskPollerBehavior != fixed {
		t.Fatalf("set by the caller: %+v", got)
	}
}
