// Command baseline is the floor of the comparison: a bare hand-written
// agent loop over net/http and encoding/json (package chatwire) with
// nothing else — no framework, no persistence. Every other contender's
// numbers are read as a ratio to this one, measured in the same run.
//
// With -commit sqlite or -commit postgres it is a floor of a durable loop
// instead. Before each tool call it commits one row recording the call
// and waits for that commit: the least any runtime must pay for a tool
// that must not run twice after a crash (agentloop with a plain tool pays
// one such commit per call, and more besides: its log, its summary). With
// -at end it commits one row when the session ends, before Run returns:
// the least a runtime pays whose sessions are durable when they return.
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
	var commit, at, pg string
	flag.StringVar(&commit, "commit", "", "sqlite or postgres: commit one row and wait for the commit, where -at says (SQLite in WAL mode, synchronous=NORMAL, as store/sqlite; PostgreSQL with fsync on); empty: nothing persisted")
	flag.StringVar(&at, "at", "call", "-commit: call (before each tool call: the floor of a tool that must not run twice) or end (once, when the session ends: the floor of a session whose end is durable when it returns)")
	flag.StringVar(&pg, "pg", os.Getenv("AGENTLOOP_BENCH_POSTGRES"), "-commit postgres: a server's URL (postgres://…; a database is made for the run and dropped); empty: start a server of its own")
	harness.Main(func() harness.Contender {
		if commit == "" {
			return harness.Contender{
				Name:  "baseline",
				Notes: "hand-written loop: net/http + encoding/json, no framework, nothing persisted",
				New: func(ctx context.Context, env harness.Env) (*harness.Runtime, error) {
					return newRuntime(ctx, env, durable{})
				},
			}
		}
		db := map[string]string{"sqlite": "SQLite", "postgres": "PostgreSQL"}[commit]
		name, notes := "baseline-"+commit+"-commit", "the hand-written loop plus, before each tool call, one "+db+" commit of one row recording the call, waited for: the floor of a tool that must not run twice"
		switch at {
		case "call":
		case "end":
			name, notes = "baseline-"+commit+"-end-commit", "the hand-written loop plus, when a session ends, one "+db+" commit of one row recording its end, waited for: the floor of a session whose end is durable when it returns"
		default:
			fmt.Fprintf(os.Stderr, "baseline: -at %q: want call or end\n", at)
			os.Exit(2)
		}
		return harness.Contender{
			Name:  name,
			Notes: notes,
			New: func(ctx context.Context, env harness.Env) (*harness.Runtime, error) {
				rec, err := newRecorder(ctx, commit, env.Dir, pg)
				if err != nil {
					return nil, err
				}
				rt, err := newRuntime(ctx, env, durable{rec: rec, atEnd: at == "end"})
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

// durable is what a run records: nothing (no rec), each tool call before
// it runs, or each session's end before Run returns (atEnd).
type durable struct {
	rec   recorder
	atEnd bool
}

// newRuntime runs sessions of the bare loop, recording what d says.
func newRuntime(_ context.Context, env harness.Env, d durable) (*harness.Runtime, error) {
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
				final := ""
				if msg.Content != nil {
					final = *msg.Content
				}
				if d.rec != nil && d.atEnd {
					if err := d.rec.Record(ctx, session, calls, "end", final); err != nil {
						return "", fmt.Errorf("recording the end: %w", err)
					}
				}
				return final, nil
			}
			req.Messages = append(req.Messages, msg)
			for _, tc := range msg.ToolCalls {
				calls++
				if d.rec != nil && !d.atEnd {
					if err := d.rec.Record(ctx, session, calls, tc.ID, tc.Function.Arguments); err != nil {
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
