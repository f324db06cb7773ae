// Command baseline is the floor of the comparison: a bare hand-written
// agent loop over net/http and encoding/json (package chatwire) with
// nothing else — no framework, no persistence. Every other contender's
// numbers are read as a ratio to this one, measured in the same run.
//
// With -commit sqlite or -commit postgres it is the floor of a durable
// loop instead: before each tool call it commits one row recording the
// call and waits for that commit, the least any runtime must pay for a
// tool that must not run twice after a crash. agentloop with a plain tool
// pays one such commit per call, and more besides (its log, its summary).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/agentloop/agentloop/bench/compare/chatwire"
	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func main() {
	var commit, pg string
	flag.StringVar(&commit, "commit", "", "sqlite or postgres: before each tool call, commit one row recording it and wait for the commit (SQLite in WAL mode, synchronous=NORMAL, as store/sqlite; PostgreSQL with fsync on); empty: nothing persisted")
	flag.StringVar(&pg, "pg", os.Getenv("AGENTLOOP_BENCH_POSTGRES"), "-commit postgres: a server's URL (postgres://…; a database is made for the run and dropped); empty: start a server of its own")
	harness.Main(func() harness.Contender {
		if commit == "" {
			return harness.Contender{
				Name:  "baseline",
				Notes: "hand-written loop: net/http + encoding/json, no framework, nothing persisted",
				New:   func(ctx context.Context, env harness.Env) (*harness.Runtime, error) { return newRuntime(ctx, env, nil) },
			}
		}
		return harness.Contender{
			Name:  "baseline-" + commit + "-commit",
			Notes: "the hand-written loop plus, before each tool call, one " + map[string]string{"sqlite": "SQLite", "postgres": "PostgreSQL"}[commit] + " commit of one row recording the call, waited for: the floor of a durable loop",
			New: func(ctx context.Context, env harness.Env) (*harness.Runtime, error) {
				rec, err := newRecorder(ctx, commit, env.Dir, pg)
				if err != nil {
					return nil, err
				}
				rt, err := newRuntime(ctx, env, rec)
				if err != nil {
					rec.Close()
					return nil, err
				}
				rt.Close = rec.Close
				return rt, nil
			},
		}
	})
}

// newRuntime runs sessions of the bare loop; with rec, each tool call is
// recorded by it, durably, before the call runs.
func newRuntime(_ context.Context, env harness.Env, rec recorder) (*harness.Runtime, error) {
	var sessions atomic.Int64
	url := env.BaseURL + "/chat/completions"
	tools := []chatwire.Tool{{Type: "function", Function: chatwire.Function{
		Name: workload.ToolName, Description: workload.ToolDescription, Parameters: json.RawMessage(workload.ToolSchema),
	}}}
	run := func(ctx context.Context) (string, error) {
		session := "s" + strconv.FormatInt(sessions.Add(1), 10)
		calls := 0
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
				calls++
				if rec != nil {
					if err := rec.Record(ctx, session, calls, tc.ID, tc.Function.Arguments); err != nil {
						return "", fmt.Errorf("recording tool call %d: %w", calls, err)
					}
				}
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
