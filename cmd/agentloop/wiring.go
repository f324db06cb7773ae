package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/model/tokens"
	"github.com/agentloop/agentloop/prompt"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/git"
	"github.com/agentloop/agentloop/tool/session"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
	"github.com/agentloop/agentloop/toolcall"
)

// extraTools are the tools beyond file access: commands, git, and the
// session's own plan, memory, questions and final answer.
func extraTools(ws *workspace.Workspace) []tool.Tool {
	out := []tool.Tool{shell.New(ws, shell.Config{})}
	out = append(out, git.Tools(ws)...)
	return append(out, session.Tools()...)
}

// systemPrompt builds the session's system prompt. A stored session keeps
// the prompt it started with (it is in its log).
func (o *sessionFlags) systemPrompt(env *cliEnv, st *loop.State) (string, error) {
	if st != nil {
		return st.SystemPrompt, nil
	}
	// The step limit is always stated, and files the task names are listed.
	steps := o.limitsWith(env.hasWriteTools(), env.profile).MaxIterations
	d := prompt.Data{Tools: env.registry.Specs(), MaxIterations: steps, Marker: o.marker, Mode: o.promptMode()}
	d.Workspace = prompt.Workspace(env.dir, o.task)
	if o.promptFile != "" {
		return prompt.Build(d, prompt.Options{TemplatePath: o.promptFile})
	}
	return prompt.Build(d)
}

// parseToolCalls recovers tool calls models write as text.
func parseToolCalls(text string, tools []model.ToolSpec) loop.Recovered {
	r := toolcall.Parse(text, toolcall.Options{Tools: tools})
	return loop.Recovered{Calls: r.Calls, Content: r.Content, Format: r.Format, Attempted: r.Attempted, Problem: r.Problem}
}

// loadPrices returns the built-in price table, extended by the JSON file
// in $AGENTLOOP_PRICES or, failing that, the config file's prices.
func loadPrices(configured string) (price.Table, error) {
	path := os.Getenv("AGENTLOOP_PRICES")
	if path == "" {
		path = configured
	}
	if path == "" {
		return price.Default(), nil
	}
	t, err := price.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%w (fix the file, or unset AGENTLOOP_PRICES / the config's prices to use the built-in table)", err)
	}
	return t, nil
}

func estimateUsage(req *model.Request, resp *model.Response) model.Usage {
	return tokens.Estimate(req, resp)
}

func openProvider(spec string, opts provider.Options) (model.Model, string, error) {
	if spec == "" {
		spec = provider.DefaultSpec
	}
	m, err := provider.Open(spec, opts)
	if err != nil {
		return nil, "", err
	}
	return m, spec, nil
}

// noModel is the model of a runner that only records (terminate).
type noModel struct{}

func (noModel) Generate(context.Context, *model.Request, model.StreamFunc) (*model.Response, error) {
	return nil, errors.New("no model is configured for this command")
}
