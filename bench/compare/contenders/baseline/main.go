// Command baseline is the floor of the comparison: a bare hand-written
// agent loop over net/http and encoding/json (package chatwire) with
// nothing else — no framework, no persistence. Every other contender's
// numbers are read as a ratio to this one, measured in the same run.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentloop/agentloop/bench/compare/chatwire"
	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func main() {
	harness.Main(func() harness.Contender {
		return harness.Contender{
			Name:  "baseline",
			Notes: "hand-written loop: net/http + encoding/json, no framework, nothing persisted",
			New:   newRuntime,
		}
	})
}

func newRuntime(_ context.Context, env harness.Env) (*harness.Runtime, error) {
	url := env.BaseURL + "/chat/completions"
	tools := []chatwire.Tool{{Type: "function", Function: chatwire.Function{
		Name: workload.ToolName, Description: workload.ToolDescription, Parameters: json.RawMessage(workload.ToolSchema),
	}}}
	run := func(ctx context.Context) (string, error) {
		req := &chatwire.Request{Model: workload.ModelName, Tools: tools, Messages: []chatwire.Message{
			{Role: "system", Content: chatwire.Str(workload.SystemPrompt)},
			{Role: "user", Content: chatwire.Str(workload.Prompt)},
		}}
		for range workload.Iterations + 4 {
			resp, err := chatwire.Post(ctx, env.HTTPClient, url, workload.APIKey, req)
			if err != nil {
				return "", err
			}
			msg := resp.Choices[0].Message
			if len(msg.ToolCalls) == 0 {
				if msg.Content == nil {
					return "", nil
				}
				return *msg.Content, nil
			}
			req.Messages = append(req.Messages, msg)
			for _, tc := range msg.ToolCalls {
				var out string
				if tc.Function.Name != workload.ToolName {
					out = "error: unknown tool " + tc.Function.Name
				} else if sum, err := workload.AddJSON(ctx, []byte(tc.Function.Arguments)); err != nil {
					out = "error: " + err.Error()
				} else {
					out = strconv.Itoa(sum)
				}
				req.Messages = append(req.Messages, chatwire.Message{Role: "tool", ToolCallID: tc.ID, Content: &out})
			}
		}
		return "", fmt.Errorf("no final answer after %d model calls", workload.Iterations+4)
	}
	return &harness.Runtime{Run: run}, nil
}
