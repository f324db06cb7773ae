package temporal_test

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/temporal"
)

// A history recorded from a real dev server (a session whose worker was
// SIGKILLed mid-step; regenerate with AGENTLOOP_SAVE_HISTORY=1 go test
// ./cmd/agentloop -run TestTemporalWorkersSurviveSIGKILL) replays against
// today's workflow code: a change that breaks determinism fails here.
func TestRecordedHistoryReplays(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/history.json"); err != nil {
		t.Fatal(err)
	}
}
