// Command eino-adk is the eino contender through its ADK: a ChatModelAgent
// over eino-ext's OpenAI chat model with the add tool, run by adk.Runner
// (EnableStreaming false), reading the final message from the event
// iterator.
package main

import (
	"context"
	"errors"

	"github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func main() {
	harness.Main(func() harness.Contender {
		return harness.Contender{Name: "eino-adk", Notes: "eino adk.ChatModelAgent + adk.Runner + eino-ext openai ChatModel", New: newRuntime}
	})
}

func newRuntime(ctx context.Context, env harness.Env) (*harness.Runtime, error) {
	cm, err := openai.NewChatModel(ctx, &openai.ChatModelConfig{BaseURL: env.BaseURL, APIKey: workload.APIKey, Model: workload.ModelName, HTTPClient: env.HTTPClient})
	if err != nil {
		return nil, err
	}
	add, err := utils.InferTool(workload.ToolName, workload.ToolDescription, func(ctx context.Context, in workload.AddInput) (int, error) {
		return workload.Add(ctx, in.A, in.B)
	})
	if err != nil {
		return nil, err
	}
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name:          "adder",
		Description:   "adds numbers",
		Instruction:   workload.SystemPrompt,
		Model:         cm,
		ToolsConfig:   adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{add}}},
		MaxIterations: workload.Iterations + 4,
	})
	if err != nil {
		return nil, err
	}
	runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent})
	run := func(ctx context.Context) (string, error) {
		iter := runner.Run(ctx, []adk.Message{schema.UserMessage(workload.Prompt)})
		var final string
		for {
			ev, ok := iter.Next()
			if !ok {
				break
			}
			if ev.Err != nil {
				return "", ev.Err
			}
			if ev.Output != nil && ev.Output.MessageOutput != nil {
				msg, err := ev.Output.MessageOutput.GetMessage()
				if err != nil {
					return "", err
				}
				if msg.Role == schema.Assistant && len(msg.ToolCalls) == 0 {
					final = msg.Content
				}
			}
		}
		if final == "" {
			return "", errors.New("no final assistant message among the events")
		}
		return final, nil
	}
	return &harness.Runtime{Run: run}, nil
}
