// Command genkit is the Genkit Go contender: genkit.Generate with the add
// tool and max turns (Genkit runs the tool loop itself), through the
// OpenAI-compatible plugin (plugins/compat_oai/openai) pointed at the fake
// server, non-streaming.
package main

import (
	"context"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	oai "github.com/firebase/genkit/go/plugins/compat_oai/openai"
	"github.com/openai/openai-go/option"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func main() {
	harness.Main(func() harness.Contender {
		return harness.Contender{Name: "genkit", Notes: "genkit.Generate + WithTools + WithMaxTurns, compat_oai openai plugin", New: newRuntime}
	})
}

func newRuntime(ctx context.Context, env harness.Env) (*harness.Runtime, error) {
	g := genkit.Init(ctx, genkit.WithPlugins(&oai.OpenAI{APIKey: workload.APIKey, Opts: []option.RequestOption{
		option.WithBaseURL(env.BaseURL), option.WithHTTPClient(env.HTTPClient),
	}}))
	add := genkit.DefineTool(g, workload.ToolName, workload.ToolDescription, func(tc *ai.ToolContext, in workload.AddInput) (int, error) {
		return workload.Add(tc, in.A, in.B)
	})
	run := func(ctx context.Context) (string, error) {
		resp, err := genkit.Generate(ctx, g,
			ai.WithModelName("openai/"+workload.ModelName),
			ai.WithSystem(workload.SystemPrompt),
			ai.WithPrompt(workload.Prompt),
			ai.WithTools(add),
			ai.WithMaxTurns(workload.Iterations+4),
		)
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	}
	return &harness.Runtime{Run: run}, nil
}
