// Package loopbench measures the runtime's own cost: everything an agent
// loop iteration spends besides the model's and the tools' time.
package loopbench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// K is the number of tool-calling iterations per session; a final answer
// makes K+1 model calls (the workload of issue 5).
const K = 10

// AddTool is add({"a":int,"b":int}) → sum: tool time is ~0. It is pure,
// so it declares itself idempotent (as read-only tools do).
func AddTool() tool.Tool {
	return pure{tool.Func(model.ToolSpec{
		Name:        "add",
		Description: "Add two integers.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`),
	}, func(_ context.Context, args json.RawMessage) (tool.Result, error) {
		var in struct{ A, B int }
		if err := json.Unmarshal(args, &in); err != nil {
			return tool.Result{}, err
		}
		return tool.Result{Output: strconv.Itoa(in.A + in.B)}, nil
	})}
}

type pure struct{ tool.Tool }

func (pure) Idempotent() bool    { return true }
func (pure) Effect() tool.Effect { return tool.EffectRead }

// Script is K add calls then the final answer, with usage given so the
// model does no estimating.
func Script() *scripted.Script {
	u := model.Usage{InputTokens: 200, OutputTokens: 20}
	s := &scripted.Script{Name: "bench"}
	for i := range K {
		s.Steps = append(s.Steps, scripted.Call("add", fmt.Sprintf(`{"a":%d,"b":%d}`, i, i+1)).WithUsage(u))
	}
	s.Steps = append(s.Steps, scripted.Text("the sums are done").WithUsage(u))
	return s
}

// Final is the answer every session must end with.
const Final = "the sums are done"

// Check fails loudly when a session did not do exactly the work.
func Check(st *loop.State) error {
	if st.Status != loop.StatusCompleted || st.Answer != Final || st.ToolCallCount != K || st.InteractionCount != K+1 {
		return fmt.Errorf("session %s: status %s (%s %s), answer %q, %d tool calls, %d model calls: want completed with %q, %d tool calls, %d model calls",
			st.ID, st.Status, st.Reason, st.Detail, st.Answer, st.ToolCallCount, st.InteractionCount, Final, K, K+1)
	}
	return nil
}

// registry is built once: schemas compile once per tool, not per session.
var registry = tool.MustRegistry(AddTool())

// Runner builds a runner over log with the add tool.
func Runner(m model.Model, log loop.Log) (*loop.Runner, error) {
	return loop.New(Config(m, log))
}

// Config is the runner configuration of the workload.
func Config(m model.Model, log loop.Log) loop.Config {
	return loop.Config{Model: m, ModelName: "bench", Tools: registry, Log: log, SystemPrompt: "You add numbers.",
		Limits: loop.Limits{MaxIterations: K + 5}}
}

// Resolver gives every session the workload's tools and a fresh scripted
// model, for runners that resolve sessions (package service).
func Resolver(script *scripted.Script) loop.Resolver {
	return func(context.Context, *loop.SessionStarted, *loop.State) (*loop.Env, error) {
		return &loop.Env{Model: scripted.NewCompact(script), Tools: registry}, nil
	}
}
