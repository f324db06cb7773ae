// Command langchaingo-agent is the langchaingo contender through its agents
// executor: an OpenAIFunctionsAgent over llms/openai with the add tool,
// run by agents.NewExecutor (max iterations raised from the default 5 so
// the K calls fit).
package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/tools"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func main() {
	harness.Main(func() harness.Contender {
		return harness.Contender{Name: "langchaingo-agent", Notes: "langchaingo agents.NewExecutor(OpenAIFunctionsAgent), chains.Call", New: newRuntime}
	})
}

// add is a langchaingo tools.Tool: it gets the call's arguments as a string
// (the JSON object, since the model does not use the agent's __arg1 form).
type add struct{}

var _ tools.Tool = add{}

func (add) Name() string        { return workload.ToolName }
func (add) Description() string { return workload.ToolDescription + ` Input: {"a":int,"b":int}.` }
func (add) Call(ctx context.Context, input string) (string, error) {
	sum, err := workload.AddJSON(ctx, []byte(input))
	if err != nil {
		return "", err
	}
	return strconv.Itoa(sum), nil
}

func newRuntime(_ context.Context, env harness.Env) (*harness.Runtime, error) {
	llm, err := openai.New(openai.WithBaseURL(env.BaseURL), openai.WithToken(workload.APIKey), openai.WithModel(workload.ModelName),
		openai.WithHTTPClient(env.HTTPClient))
	if err != nil {
		return nil, err
	}
	agent := agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{add{}}, agents.NewOpenAIOption().WithSystemMessage(workload.SystemPrompt))
	executor := agents.NewExecutor(agent, agents.WithMaxIterations(workload.Iterations+4))
	run := func(ctx context.Context) (string, error) {
		out, err := chains.Call(ctx, executor, map[string]any{"input": workload.Prompt})
		if err != nil {
			return "", err
		}
		s, ok := out["output"].(string)
		if !ok {
			return "", fmt.Errorf("executor output %v has no string \"output\"", out)
		}
		return s, nil
	}
	return &harness.Runtime{Run: run}, nil
}
