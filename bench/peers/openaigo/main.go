// Command openaigo is the openai-go contender: a hand-written tool loop over
// the official SDK's Chat Completions client (non-streaming), as its
// documentation shows: append the reply with ToParam, then one
// ToolMessage per call.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func main() {
	harness.Main(func() harness.Contender {
		return harness.Contender{Name: "openai-go", Notes: "openai-go v3 Chat.Completions.New, hand-written tool loop", New: newRuntime}
	})
}

func newRuntime(_ context.Context, env harness.Env) (*harness.Runtime, error) {
	client := openai.NewClient(option.WithBaseURL(env.BaseURL), option.WithAPIKey(workload.APIKey), option.WithHTTPClient(env.HTTPClient))
	var params shared.FunctionParameters
	if err := json.Unmarshal([]byte(workload.ToolSchema), &params); err != nil {
		return nil, err
	}
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: workload.ToolName, Description: openai.String(workload.ToolDescription), Parameters: params,
	})}
	run := func(ctx context.Context) (string, error) {
		p := openai.ChatCompletionNewParams{
			Model: workload.ModelName,
			Tools: tools,
			Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage(workload.SystemPrompt),
				openai.UserMessage(workload.Prompt),
			},
		}
		for range workload.Iterations + 4 {
			c, err := client.Chat.Completions.New(ctx, p)
			if err != nil {
				return "", err
			}
			if len(c.Choices) == 0 {
				return "", fmt.Errorf("reply without choices")
			}
			msg := c.Choices[0].Message
			if len(msg.ToolCalls) == 0 {
				return msg.Content, nil
			}
			p.Messages = append(p.Messages, msg.ToParam())
			for _, tc := range msg.ToolCalls {
				out := ""
				if sum, err := workload.AddJSON(ctx, []byte(tc.Function.Arguments)); err != nil {
					out = "error: " + err.Error()
				} else {
					out = strconv.Itoa(sum)
				}
				p.Messages = append(p.Messages, openai.ToolMessage(out, tc.ID))
			}
		}
		return "", fmt.Errorf("no final answer after %d model calls", workload.Iterations+4)
	}
	return &harness.Runtime{Run: run}, nil
}
