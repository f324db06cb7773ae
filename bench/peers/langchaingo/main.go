// Command langchaingo is the langchaingo contender with a hand-written tool
// loop over llms/openai GenerateContent with tools (non-streaming), the
// pattern of langchaingo's own function-calling examples: append the
// AI message with its ToolCall parts, then a tool message with a
// ToolCallResponse per call.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func main() {
	harness.Main(func() harness.Contender {
		return harness.Contender{Name: "langchaingo", Notes: "langchaingo llms/openai GenerateContent + WithTools, hand-written tool loop", New: newRuntime}
	})
}

func newRuntime(_ context.Context, env harness.Env) (*harness.Runtime, error) {
	llm, err := openai.New(openai.WithBaseURL(env.BaseURL), openai.WithToken(workload.APIKey), openai.WithModel(workload.ModelName),
		openai.WithHTTPClient(env.HTTPClient))
	if err != nil {
		return nil, err
	}
	var params map[string]any
	if err := json.Unmarshal([]byte(workload.ToolSchema), &params); err != nil {
		return nil, err
	}
	tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name: workload.ToolName, Description: workload.ToolDescription, Parameters: params,
	}}}
	run := func(ctx context.Context) (string, error) {
		history := []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, workload.SystemPrompt),
			llms.TextParts(llms.ChatMessageTypeHuman, workload.Prompt),
		}
		for range workload.Iterations + 4 {
			resp, err := llm.GenerateContent(ctx, history, llms.WithTools(tools))
			if err != nil {
				return "", err
			}
			if len(resp.Choices) == 0 {
				return "", fmt.Errorf("reply without choices")
			}
			choice := resp.Choices[0]
			if len(choice.ToolCalls) == 0 {
				return choice.Content, nil
			}
			ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			for _, tc := range choice.ToolCalls {
				ai.Parts = append(ai.Parts, tc)
			}
			history = append(history, ai)
			for _, tc := range choice.ToolCalls {
				out := ""
				if sum, err := workload.AddJSON(ctx, []byte(tc.FunctionCall.Arguments)); err != nil {
					out = "error: " + err.Error()
				} else {
					out = strconv.Itoa(sum)
				}
				history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: out},
				}})
			}
		}
		return "", fmt.Errorf("no final answer after %d model calls", workload.Iterations+4)
	}
	return &harness.Runtime{Run: run}, nil
}
