// Command adkgo is the adk-go contender: an llmagent with the add tool
// (functiontool) run by runner.Runner over the in-memory session service,
// non-streaming.
//
// adk-go has no Chat Completions model: its model/openaimodel speaks the
// OpenAI Responses API, which the fake server (and most OpenAI-compatible
// servers) do not. So this contender brings a minimal model.LLM adapter
// (chatModel below) over package chatwire — the same net/http +
// encoding/json wire code the baseline uses — so what is measured on top of
// the baseline is adk-go's agent, runner and session machinery plus the
// genai conversions the adapter must do.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync/atomic"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentloop/agentloop/bench/compare/chatwire"
	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func main() {
	harness.Main(func() harness.Contender {
		return harness.Contender{Name: "adk-go", Notes: "adk-go v2 llmagent + runner + in-memory sessions; minimal Chat Completions model.LLM adapter (adk-go ships none)", New: newRuntime}
	})
}

func newRuntime(_ context.Context, env harness.Env) (*harness.Runtime, error) {
	add, err := functiontool.New(functiontool.Config{Name: workload.ToolName, Description: workload.ToolDescription},
		func(ctx agent.Context, in workload.AddInput) (int, error) { return workload.Add(ctx, in.A, in.B) })
	if err != nil {
		return nil, err
	}
	a, err := llmagent.New(llmagent.Config{
		Name:        "adder",
		Description: "adds numbers",
		Instruction: workload.SystemPrompt,
		Model:       &chatModel{env: env},
		Tools:       []tool.Tool{add},
	})
	if err != nil {
		return nil, err
	}
	r, err := runner.New(runner.Config{AppName: "bench", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	if err != nil {
		return nil, err
	}
	var ids atomic.Int64
	run := func(ctx context.Context) (string, error) {
		sid := "s" + strconv.FormatInt(ids.Add(1), 10)
		var final string
		for ev, err := range r.Run(ctx, "user", sid, genai.NewContentFromText(workload.Prompt, genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				return "", err
			}
			if ev.IsFinalResponse() && ev.Content != nil {
				for _, p := range ev.Content.Parts {
					final += p.Text
				}
			}
		}
		return final, nil
	}
	return &harness.Runtime{Run: run}, nil
}

// chatModel is a model.LLM over Chat Completions (non-streaming).
type chatModel struct{ env harness.Env }

func (m *chatModel) Name() string { return workload.ModelName }

func (m *chatModel) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		cr, err := toChat(req)
		if err != nil {
			yield(nil, err)
			return
		}
		resp, err := chatwire.Post(ctx, m.env.HTTPClient, m.env.BaseURL+"/chat/completions", workload.APIKey, cr)
		if err != nil {
			yield(nil, err)
			return
		}
		out, err := fromChat(resp)
		yield(out, err)
	}
}

func toChat(req *model.LLMRequest) (*chatwire.Request, error) {
	cr := &chatwire.Request{Model: workload.ModelName}
	if req.Config != nil {
		if si := req.Config.SystemInstruction; si != nil {
			var text string
			for _, p := range si.Parts {
				text += p.Text
			}
			if text != "" {
				cr.Messages = append(cr.Messages, chatwire.Message{Role: "system", Content: &text})
			}
		}
		for _, t := range req.Config.Tools {
			for _, fd := range t.FunctionDeclarations {
				var schema any = fd.ParametersJsonSchema
				if schema == nil {
					schema = fd.Parameters
				}
				params, err := json.Marshal(schema)
				if err != nil {
					return nil, fmt.Errorf("tool %s: %w", fd.Name, err)
				}
				cr.Tools = append(cr.Tools, chatwire.Tool{Type: "function", Function: chatwire.Function{Name: fd.Name, Description: fd.Description, Parameters: params}})
			}
		}
	}
	for _, c := range req.Contents {
		if c == nil {
			continue
		}
		var text string
		var calls []chatwire.ToolCall
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				args, err := json.Marshal(p.FunctionCall.Args)
				if err != nil {
					return nil, err
				}
				calls = append(calls, chatwire.ToolCall{ID: p.FunctionCall.ID, Type: "function", Function: chatwire.FunctionCall{Name: p.FunctionCall.Name, Arguments: string(args)}})
			case p.FunctionResponse != nil:
				out, err := json.Marshal(p.FunctionResponse.Response)
				if err != nil {
					return nil, err
				}
				s := string(out)
				cr.Messages = append(cr.Messages, chatwire.Message{Role: "tool", ToolCallID: p.FunctionResponse.ID, Content: &s})
			default:
				text += p.Text
			}
		}
		switch {
		case c.Role == genai.RoleModel:
			msg := chatwire.Message{Role: "assistant", ToolCalls: calls}
			if text != "" || len(calls) == 0 {
				msg.Content = &text
			}
			cr.Messages = append(cr.Messages, msg)
		case text != "":
			cr.Messages = append(cr.Messages, chatwire.Message{Role: "user", Content: &text})
		}
	}
	return cr, nil
}

func fromChat(resp *chatwire.Response) (*model.LLMResponse, error) {
	msg := resp.Choices[0].Message
	content := &genai.Content{Role: genai.RoleModel}
	if msg.Content != nil && *msg.Content != "" {
		content.Parts = append(content.Parts, &genai.Part{Text: *msg.Content})
	}
	for _, tc := range msg.ToolCalls {
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
			return nil, fmt.Errorf("tool call %s: arguments %q: %w", tc.ID, tc.Function.Arguments, err)
		}
		content.Parts = append(content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: args}})
	}
	if len(content.Parts) == 0 {
		return nil, errors.New("the reply has neither text nor tool calls")
	}
	out := &model.LLMResponse{Content: content, FinishReason: genai.FinishReasonStop, TurnComplete: true}
	if u := resp.Usage; u != nil {
		out.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{
			PromptTokenCount: int32(u.PromptTokens), CandidatesTokenCount: int32(u.CompletionTokens), TotalTokenCount: int32(u.TotalTokens),
		}
	}
	return out, nil
}
