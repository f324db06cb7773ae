package temporal

import (
	"os"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
)

// ReadHistory collects a workflow's history from the client's iterator
// (client.Client.GetWorkflowHistory), for a replay test or a record.
func ReadHistory(it client.HistoryEventIterator) (*historypb.History, error) {
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		h.Events = append(h.Events, e)
	}
	return h, nil
}

// WriteHistory saves a history as JSON, the form
// worker.WorkflowReplayer.ReplayWorkflowHistoryFromJSONFile reads.
func WriteHistory(path string, h *historypb.History) error {
	b, err := protojson.MarshalOptions{Indent: " "}.Marshal(h)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
