package temporal_test

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/temporal"
)

// Histories recorded from a real dev server — history-v0.json before
// bookkeeping became a local activity, history-v1.json before every step
// did (both kept: old workflows must replay), history.json after (a
// session whose worker was SIGKILLed mid-step; regenerate with
// AGENTLOOP_SAVE_HISTORY=1 go test ./cmd/agentloop -run
// TestTemporalWorkersSurviveSIGKILL) — replay against today's workflow
// code: a change that breaks determinism fails here.
func TestRecordedHistoryReplays(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
	for _, f := range []string{"testdata/history-v0.json", "testdata/history-v1.json", "testdata/history.json"} {
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}
