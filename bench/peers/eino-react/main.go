// Command eino-react is the eino contender through flow/agent/react: a ReAct
// agent over eino-ext's OpenAI chat model (non-streaming Generate) with the
// add tool built by utils.InferTool. MaxStep counts graph nodes (a model
// call and a tools call per iteration), so it is raised from the default 12
// to fit K calls.
package main

import (
	"context"

	"github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func main() {
	harness.Main(func() harness.Contender {
		return harness.Contender{Name: "eino-react", Notes: "eino flow/agent/react + eino-ext openai ChatModel, Generate", New: newRuntime}
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
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: cm,
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{add}},
		MaxStep:          2*(workload.Iterations+4) + 1,
	})
	if err != nil {
		return nil, err
	}
	run := func(ctx context.Context) (string, error) {
		out, err := agent.Generate(ctx, []*schema.Message{schema.SystemMessage(workload.SystemPrompt), schema.UserMessage(workload.Prompt)})
		if err != nil {
			return "", err
		}
		return out.Content, nil
	}
	return &harness.Runtime{Run: run}, nil
}
