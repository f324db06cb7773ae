package assemble

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/notify"
	"github.com/agentloop/agentloop/service"
)

// StartDefaults are what a start request leaves out, and what a request
// may ask for beyond them.
type StartDefaults struct {
	Model string
	// FallbackModels follow Model for a request that names neither
	// another model nor fallback models of its own.
	FallbackModels []string
	Endpoint       string
	Profile        string
	// Approval is "auto" (tools run without asking), "ask", or "profile"
	// (the profile's own rules: a default only, with Profile set; a
	// request cannot ask for it).
	Approval      string
	MaxIterations int
	// Limits are the limits a session starts from; the request's own
	// limits and MaxIterations go on top. Nil means the server's standard
	// limits.
	Limits *loop.Limits
	// Profiles, when set, looks up the session's profile, whose limits go
	// on top of Limits and under the request's own. Nil: the caller has
	// applied the profile's limits itself (the CLI, whose flags win).
	Profiles func(name string) (config.Profile, error)
	// ModelOptions are the provider settings every session starts with
	// (Ollama's num_ctx, streaming with tools); a request's thinking goes
	// on top.
	ModelOptions loop.ModelOptions
	// AllowFiles lets a request name files of this machine: scripted
	// models (script:PATH) and protocol files.
	AllowFiles bool
	// LocalVerify lets a request bring verification commands under any
	// approval: the person asking is the one whose machine runs them
	// (the CLI). Otherwise only a session whose tools run unasked may.
	LocalVerify bool
	// NotifyURLs lets a request name its own notify URL (the server signs
	// and sends those notifications); NotifyPrivate lets that URL be a
	// loopback or private address.
	NotifyURLs, NotifyPrivate bool
}

// Bounds on verification commands a request supplies.
const (
	maxVerifyCommands = 16
	maxVerifyLength   = 4096
)

// Task turns a start request into the loop.Task to start, with the
// defaults applied: the one place a request is normalised. A request may
// narrow what the server allows, never widen it: mayRunUnasked says
// whether it may ask for tools that run without asking. Errors are
// service errors (invalid, or forbidden for what the caller may not ask).
func (d StartDefaults) Task(req api.StartRequest, mayRunUnasked bool) (loop.Task, error) {
	var t loop.Task
	asked := 0
	if req.Task != "" {
		asked++
		t.Prompt = req.Task
	}
	if len(req.Messages) > 0 {
		asked++
		t.Messages = Messages(req.Messages)
	}
	if req.UserMessage != "" || (req.SystemPrompt != "" && req.Task == "" && len(req.Messages) == 0) {
		asked++
		if req.UserMessage == "" {
			return t, invalid("system_prompt needs a user_message with it")
		}
		t.Prompt, t.SystemPrompt = req.UserMessage, req.SystemPrompt
	} else if req.SystemPrompt != "" {
		t.SystemPrompt = req.SystemPrompt
	}
	switch {
	case asked == 0:
		return t, invalid(`say what to do: "task", "messages", or "system_prompt" with "user_message"`)
	case asked > 1:
		return t, invalid(`give one of "task", "messages", or "system_prompt" with "user_message", not several`)
	}
	spec, err := d.RequestedModel("", firstSet(req.Model, d.Model))
	if err != nil {
		return t, err
	}
	t.Model, t.Endpoint, t.Profile = spec, d.Endpoint, firstSet(req.Profile, d.Profile)
	if req.Model != "" && req.Model != d.Model {
		t.Endpoint = "" // another model: its provider's own endpoint
	}
	if len(req.FallbackModels) > 8 {
		return t, invalid("fallback_models: at most 8 models, not %d", len(req.FallbackModels))
	}
	for i, m := range req.FallbackModels {
		if m == "" {
			return t, invalid("fallback_models[%d] is empty: give each as PROVIDER/NAME, e.g. openai/gpt-4.1", i)
		}
		f, err := d.RequestedModel(fmt.Sprintf("fallback_models[%d]: ", i), m)
		if err != nil {
			return t, err
		}
		t.FallbackModels = append(t.FallbackModels, f)
	}
	if len(req.FallbackModels) == 0 && (req.Model == "" || req.Model == d.Model) {
		t.FallbackModels = d.FallbackModels
	}
	mo := d.ModelOptions
	if req.Thinking != "" {
		if _, _, err := provider.ParseThinking(req.Thinking); err != nil {
			return t, invalid("%v", err)
		}
		mo.Thinking = req.Thinking
	}
	if mo != (loop.ModelOptions{}) {
		t.ModelOptions = &mo
	}
	switch req.Mode {
	case "", "tools":
		t.Mode = loop.ModeTools
	case "thinking":
		t.Mode = loop.ModeTools
		if req.MaxIterations == 0 {
			req.MaxIterations = 10
		}
	case "flash":
		t.Mode = loop.ModeSingleShot
	case "self-reasoning", "self_reasoning":
		t.Mode = loop.ModeSelfReasoning
	default:
		return t, invalid("mode %q: use tools, thinking, flash or self-reasoning", req.Mode)
	}
	switch t.Approval = firstSet(req.Approval, d.Approval, "ask"); t.Approval {
	case "profile":
		if req.Approval != "" || t.Profile == "" {
			return t, invalid(`approval %q: use "auto" (tools run without asking) or "ask" (writing tools wait for POST …/approvals/{call})`, t.Approval)
		}
	case "auto":
		if !mayRunUnasked {
			return t, forbidden(`approval "auto" refused: this server asks before writing and executing tools run (it was started without --yes), and only an admin key may ask for more; leave approval out, or start the server with --yes`)
		}
	case "ask":
	default:
		return t, invalid(`approval %q: use "auto" (tools run without asking) or "ask" (writing tools wait for POST …/approvals/{call})`, req.Approval)
	}
	if len(req.Verify) > 0 {
		// Verification commands run without an approval of their own, so
		// only a session whose tools run unasked may bring its own.
		if t.Approval != "auto" && !d.LocalVerify {
			return t, forbidden(`"verify" refused: verification commands run without asking, and this session asks before commands run (approval "ask"); run the checks as the session's own commands, or use a session with approval "auto"`)
		}
		if len(req.Verify) > maxVerifyCommands {
			return t, invalid("verify: at most %d commands, not %d", maxVerifyCommands, len(req.Verify))
		}
		for i, v := range req.Verify {
			if strings.TrimSpace(v) == "" || len(v) > maxVerifyLength {
				return t, invalid("verify[%d]: a command of 1 to %d bytes", i, maxVerifyLength)
			}
		}
	}
	if req.MaxIterations < 0 || req.BudgetTokens < 0 || req.BudgetUSD < 0 || req.MaxOutputTokens < 0 {
		return t, invalid("limits cannot be negative")
	}
	limits := loop.Limits{NoProgressAfter: 5, MaxToolCallsPerTurn: 10, ModelCallTimeout: loop.Duration(5 * time.Minute), Timeout: loop.Duration(30 * time.Minute)}
	if d.Limits != nil {
		limits = *d.Limits
	}
	limits.MaxIterations = firstInt(d.MaxIterations, limits.MaxIterations)
	if d.Profiles != nil && t.Profile != "" {
		p, err := d.Profiles(t.Profile)
		if err != nil {
			return t, invalid("profile: %v", err)
		}
		limits = p.LimitSettings.Apply(limits)
	}
	limits.MaxIterations = firstInt(req.MaxIterations, limits.MaxIterations, loop.DefaultMaxIterations)
	if req.BudgetTokens > 0 {
		limits.BudgetTokens = req.BudgetTokens
	}
	if req.BudgetUSD > 0 {
		limits.BudgetUSD = req.BudgetUSD
	}
	if req.MaxOutputTokens > 0 {
		limits.MaxOutputTokens = req.MaxOutputTokens
	}
	if req.Timeout != "" {
		timeout, err := time.ParseDuration(req.Timeout)
		if err != nil || timeout <= 0 {
			return t, invalid("timeout %q: give a duration such as \"10m\"", req.Timeout)
		}
		limits.Timeout = loop.Duration(timeout)
	}
	if limits.ContextTokens == 0 {
		limits.ContextTokens = ContextWindow(spec, t.ModelOptions)
	}
	t.Limits = &limits
	if len(req.Labels) > 32 {
		return t, invalid("at most 32 labels")
	}
	for k, v := range req.Labels {
		if k == "" || len(k) > 64 || len(v) > 256 {
			return t, invalid("label %q: keys of 1-64 characters, values up to 256", k)
		}
	}
	t.Labels, t.Verify, t.Workspace, t.Tools = req.Labels, req.Verify, req.Workspace, req.Tools
	if len(req.AnswerSchema) > 0 && string(req.AnswerSchema) != "null" {
		if _, err := loop.CompileAnswerSchema(req.AnswerSchema); err != nil {
			return t, invalid("%v", err)
		}
		t.AnswerSchema = req.AnswerSchema
	}
	if err := d.notify(&t, req); err != nil {
		return t, err
	}
	if req.Protocol != "" {
		if !d.AllowFiles {
			return t, forbidden("protocol files name a file of the server's and are refused unless the server was started with --allow-script-models")
		}
		if t.Protocol, err = AbsPath(req.Protocol); err != nil {
			return t, invalid("protocol: %v", err)
		}
	}
	return t, nil
}

// Messages converts a conversation from its wire form.
func Messages(in []api.Message) []model.Message {
	if in == nil {
		return nil
	}
	out := make([]model.Message, len(in))
	for i, m := range in {
		out[i] = model.Message{Role: model.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, model.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Extra: c.Extra})
		}
		for _, r := range m.Reasoning {
			out[i].Reasoning = append(out[i].Reasoning, model.ReasoningBlock{Type: r.Type, Text: r.Text, Signature: r.Signature, Data: r.Data})
		}
	}
	return out
}

// WireMessages converts a conversation to its wire form.
func WireMessages(in []model.Message) []api.Message {
	if in == nil {
		return nil
	}
	out := make([]api.Message, len(in))
	for i, m := range in {
		out[i] = api.Message{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, api.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Extra: c.Extra})
		}
		for _, r := range m.Reasoning {
			out[i].Reasoning = append(out[i].Reasoning, api.ReasoningBlock{Type: r.Type, Text: r.Text, Signature: r.Signature, Data: r.Data})
		}
	}
	return out
}

func invalid(format string, a ...any) error {
	return &service.Error{Kind: service.ErrInvalid, Msg: fmt.Sprintf(format, a...)}
}

// RequestedModel is the spec of a model a request names (a session's,
// a fallback, a fork's), its messages prefixed with where: a scripted
// model (script:PATH) other than the server's own is refused unless
// files are allowed — before the path is looked at, since an answer
// about the file would tell a caller what exists on the server.
func (d StartDefaults) RequestedModel(where, model string) (string, error) {
	if strings.HasPrefix(model, "script:") && model != d.Model && !d.AllowFiles {
		return "", forbidden(where + "scripted models (script:PATH) name a file of the server's and are refused unless the server was started with --allow-script-models")
	}
	spec, err := ModelSpec(model)
	if err != nil {
		return "", invalid("%s%v", where, err) // it names the model already: `model "x": …`
	}
	return spec, nil
}

func forbidden(msg string) error { return &service.Error{Kind: service.ErrForbidden, Msg: msg} }

func firstSet(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func firstInt(n ...int) int {
	for _, x := range n {
		if x > 0 {
			return x
		}
	}
	return 0
}

// notify records the request's notify URL as a session label, the one
// way that label gets set.
func (d StartDefaults) notify(t *loop.Task, req api.StartRequest) error {
	if _, ok := req.Labels[notify.NotifyLabel]; ok {
		return invalid("label %q is reserved: give the URL as \"notify\"", notify.NotifyLabel)
	}
	if req.Notify == "" {
		return nil
	}
	if !d.NotifyURLs {
		return invalid("notify: this server sends no notifications to sessions' own URLs (start it with --webhook-secret-file)")
	}
	if err := notify.CheckURL(req.Notify, d.NotifyPrivate); err != nil {
		return invalid("notify: %v", err)
	}
	if len(req.Notify) > 256 {
		return invalid("notify: a URL of at most 256 characters")
	}
	labels := make(map[string]string, len(req.Labels)+1)
	for k, v := range req.Labels {
		labels[k] = v
	}
	labels[notify.NotifyLabel] = req.Notify
	t.Labels = labels
	return nil
}
