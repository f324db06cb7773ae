// Package mcpserver offers agentloop's sessions to MCP clients (Claude
// Desktop, IDEs, other agents) as Model Context Protocol tools and
// resources, built on the official Go SDK. `agentloop mcp` serves it over
// stdio; `agentloop serve` serves it over streamable HTTP at /mcp.
//
// It is a front end like the HTTP API, not a second engine: every tool is
// a call of package service for the caller the transport names, and what
// a session does is read from its log (the feed).
//
//	start_session      start one (task, model, approval… as POST /v1/sessions takes them); wait_seconds also waits
//	get_session        its state: status, reason, answer, question, pending approvals
//	wait_session       wait (at most timeout_seconds) until it stops running: ended, paused or waiting
//	list_sessions      the caller's sessions, newest first (status, limit)
//	reply_session      answer a waiting session, or tell a running one
//	pause_session, resume_session, terminate_session
//	decide_approval    approve or deny a tool call that waits for approval
//
//	agentloop://sessions/{id}/events  resource: the session's event log as JSON lines
//	agentloop://sessions/{id}         resource: the session's state as JSON
//
// A refusal or a failure is a tool error whose text says what happened and
// what to do (the same texts as the HTTP API's problems); the MCP request
// itself succeeds.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config is what New needs. Service and Start are required.
type Config struct {
	Service *service.Service
	// Caller says who makes a request, from what the transport carried
	// (extra is nil over stdio). Nil: every request is the local caller.
	Caller func(ctx context.Context, extra *mcp.RequestExtra) (service.Caller, error)
	// Start starts a session for the caller the way a create request
	// does, with the same defaults and the same refusals, and returns its
	// ID.
	Start func(ctx context.Context, c service.Caller, extra *mcp.RequestExtra, req api.StartRequest) (string, error)
	// Control, when set, applies a control for the caller (HTTP: through
	// the route's own checks, such as the running quota). Nil: the
	// service applies it directly.
	Control func(ctx context.Context, c service.Caller, extra *mcp.RequestExtra, ctl Control) (api.ControlResult, error)
	// Version is the server's version, as the MCP handshake reports it.
	Version string
	// MaxWait bounds a wait (default 10 minutes).
	MaxWait time.Duration
}

// Control is one control a tool asks for.
type Control struct {
	SessionID string
	// Kind is pause, resume, terminate, reply or decide.
	Kind string
	// Text is the note, reason or reply.
	Text string
	// Decision is decide's (its call, approve, args_hash, reason).
	CallID   string
	Decision api.Decision
}

// New returns the MCP server. One server serves any number of clients.
func New(cfg Config) *mcp.Server {
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 10 * time.Minute
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
		if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
			cfg.Version = info.Main.Version
		}
	}
	h := &handlers{cfg: cfg}
	s := mcp.NewServer(&mcp.Implementation{Name: "agentloop", Title: "agentloop sessions", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: "agentloop runs agent sessions: a model gets a task and tools and works until it answers. " +
			"start_session starts one (give wait_seconds to wait for its answer too); wait_session waits until it stops; " +
			"get_session reads its status and answer. A session that waits for a person (status waiting) needs reply_session " +
			"(reason question) or decide_approval (reason approval, see pending_approvals).",
	})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "start_session", Description: "Start an agent session on a task. It runs on its own; " +
		"with wait_seconds the call also waits until it stops (ended, paused or waiting for a person) and returns its answer."}, h.start)
	mcp.AddTool(s, &mcp.Tool{Name: "get_session", Description: "A session's state: status, reason, answer, the question it asks, tool calls waiting for approval.",
		Annotations: readOnly}, h.get)
	mcp.AddTool(s, &mcp.Tool{Name: "wait_session", Description: "Wait until a session stops running (ended, paused or waiting for a person), " +
		"at most timeout_seconds (default 60); timed_out says the wait ran out first.", Annotations: readOnly}, h.wait)
	mcp.AddTool(s, &mcp.Tool{Name: "list_sessions", Description: "List sessions, newest first.", Annotations: readOnly}, h.list)
	mcp.AddTool(s, &mcp.Tool{Name: "reply_session", Description: "Send a person's message: the answer a waiting session asks for " +
		"(it continues), or a message a running session's model sees next."}, h.control("reply"))
	mcp.AddTool(s, &mcp.Tool{Name: "pause_session", Description: "Pause a running session after its current step."}, h.control("pause"))
	mcp.AddTool(s, &mcp.Tool{Name: "resume_session", Description: "Continue a paused or waiting session."}, h.control("resume"))
	mcp.AddTool(s, &mcp.Tool{Name: "terminate_session", Description: "End a session. reason: completed_by_user (→ completed), failed (→ failed), " +
		"different_approach (→ terminated), stuck (→ error), or any text (→ terminated).", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, h.control("terminate"))
	mcp.AddTool(s, &mcp.Tool{Name: "decide_approval", Description: "Approve or deny a tool call a session waits on (see get_session's pending_approvals)."}, h.decide)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "session-events", Title: "A session's event log", URITemplate: "agentloop://sessions/{id}/events",
		Description: "Every event of the session's log so far, one JSON object a line, oldest first.", MIMEType: "application/x-ndjson"}, h.readResource)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "session", Title: "A session's state", URITemplate: "agentloop://sessions/{id}",
		Description: "The session's whole state (the fold of its log) as JSON.", MIMEType: "application/json"}, h.readResource)
	return s
}

func ptr[T any](v T) *T { return &v }

type handlers struct{ cfg Config }

// StartInput is start_session's input: the body of POST /v1/sessions.
type StartInput struct {
	Task           string            `json:"task,omitempty" jsonschema:"what the session is to do (or give system_prompt with user_message, or messages)"`
	Messages       []MessageInput    `json:"messages,omitempty" jsonschema:"a conversation to start from instead of a task"`
	SystemPrompt   string            `json:"system_prompt,omitempty" jsonschema:"the system prompt (with user_message, or with task)"`
	UserMessage    string            `json:"user_message,omitempty" jsonschema:"the first user message, with system_prompt"`
	Model          string            `json:"model,omitempty" jsonschema:"PROVIDER/NAME, e.g. ollama/qwen3:8b (default: the server's)"`
	FallbackModels []string          `json:"fallback_models,omitempty" jsonschema:"models to move to, in order, when the model keeps failing"`
	Mode           string            `json:"mode,omitempty" jsonschema:"tools (default), thinking, flash or self-reasoning"`
	Workspace      string            `json:"workspace,omitempty" jsonschema:"the directory it works in: a name inside the server's workspaces (default: a new one)"`
	Profile        string            `json:"profile,omitempty" jsonschema:"an agent profile of the server's config"`
	Prompt         string            `json:"prompt,omitempty" jsonschema:"a stored system prompt: name or name@version (HTTP server only)"`
	Approval       string            `json:"approval,omitempty" jsonschema:"ask (writing and executing tools wait for decide_approval) or auto (only where the server allows it)"`
	MaxIterations  int               `json:"max_iterations,omitempty" jsonschema:"at most this many steps"`
	Timeout        string            `json:"timeout,omitempty" jsonschema:"a duration such as 10m"`
	BudgetTokens   int               `json:"budget_tokens,omitempty"`
	BudgetUSD      float64           `json:"budget_usd,omitempty"`
	Verify         []string          `json:"verify,omitempty" jsonschema:"commands that must pass for the session to complete (approval auto only)"`
	Tools          []string          `json:"tools,omitempty" jsonschema:"only these tools"`
	Labels         map[string]string `json:"labels,omitempty"`
	Thinking       string            `json:"thinking,omitempty" jsonschema:"low, medium, high or a token budget"`
	WaitSeconds    float64           `json:"wait_seconds,omitempty" jsonschema:"also wait this long (at most) for the session to stop, and return its answer"`
}

// MessageInput is one message of a conversation to start from.
type MessageInput struct {
	Role    string `json:"role" jsonschema:"system, user or assistant"`
	Content string `json:"content"`
}

// IDInput names a session.
type IDInput struct {
	ID string `json:"id" jsonschema:"the session's ID"`
}

// WaitInput is wait_session's input.
type WaitInput struct {
	ID             string  `json:"id" jsonschema:"the session's ID"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"wait at most this long (default 60)"`
}

// ListInput is list_sessions' input.
type ListInput struct {
	Status string `json:"status,omitempty" jsonschema:"only this status: running, paused, waiting, completed, failed, terminated or error"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many (default 50, at most 500)"`
}

// ControlInput is the input of the controls.
type ControlInput struct {
	ID   string `json:"id" jsonschema:"the session's ID"`
	Text string `json:"text,omitempty" jsonschema:"reply: the message; pause, resume: a note; terminate: the reason"`
}

// DecideInput is decide_approval's input.
type DecideInput struct {
	ID       string `json:"id" jsonschema:"the session's ID"`
	CallID   string `json:"call_id" jsonschema:"the pending call (get_session's pending_approvals)"`
	Approve  bool   `json:"approve" jsonschema:"true runs the call, false refuses it"`
	ArgsHash string `json:"args_hash,omitempty" jsonschema:"the pending call's args_hash (default: the one pending now)"`
	Reason   string `json:"reason,omitempty" jsonschema:"what the model is told"`
}

// Session is what the session tools return.
type Session struct {
	ID            string  `json:"id"`
	Task          string  `json:"task"`
	Model         string  `json:"model,omitempty"`
	Status        string  `json:"status" jsonschema:"running, paused, waiting, completed, failed, terminated or error"`
	Reason        string  `json:"reason,omitempty" jsonschema:"why it stopped (machine-readable)"`
	Detail        string  `json:"detail,omitempty"`
	Answer        string  `json:"answer,omitempty" jsonschema:"the model's answer, once it gave one"`
	Partial       bool    `json:"partial,omitempty" jsonschema:"the answer is a best effort after a limit ended the session"`
	Question      string  `json:"question,omitempty" jsonschema:"what a waiting session asks (answer with reply_session)"`
	Iteration     int     `json:"iteration"`
	MaxIterations int     `json:"max_iterations"`
	Tokens        int     `json:"tokens"`
	CostUSD       float64 `json:"cost_usd,omitempty"`
	LastSeq       int64   `json:"last_seq" jsonschema:"the sequence number of its last event"`
	Workspace     string  `json:"workspace,omitempty"`
	// PendingApprovals are tool calls waiting for decide_approval.
	PendingApprovals []Approval `json:"pending_approvals,omitempty"`
	// TimedOut: a wait ran out before the session stopped.
	TimedOut bool `json:"timed_out,omitempty"`
}

// Approval is a tool call waiting for a decision.
type Approval struct {
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments" jsonschema:"the call's arguments (JSON)"`
	ArgsHash  string `json:"args_hash"`
}

// List is list_sessions' result.
type List struct {
	Sessions []Summary `json:"sessions"`
}

// Summary is one session of a list.
type Summary struct {
	ID        string `json:"id"`
	Task      string `json:"task"`
	Model     string `json:"model,omitempty"`
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
	Iteration int    `json:"iteration"`
	Tokens    int    `json:"tokens"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// ControlResult is what a control did.
type ControlResult struct {
	ID      string `json:"id"`
	Applied bool   `json:"applied" jsonschema:"the control took effect, or was handed to the session, which honours it at its next safe point"`
	Outcome string `json:"outcome"`
	Status  string `json:"status,omitempty"`
}

func (h *handlers) caller(ctx context.Context, extra *mcp.RequestExtra) (service.Caller, error) {
	if h.cfg.Caller == nil {
		return service.Local("mcp"), nil
	}
	return h.cfg.Caller(ctx, extra)
}

// validID refuses what is not a session ID before it reaches a store.
var validID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func checkID(id string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("%q is not a session ID (letters, digits, - and _; list_sessions shows them)", id)
	}
	return nil
}

func (h *handlers) start(ctx context.Context, req *mcp.CallToolRequest, in StartInput) (*mcp.CallToolResult, Session, error) {
	c, err := h.caller(ctx, req.Extra)
	if err != nil {
		return nil, Session{}, err
	}
	if in.WaitSeconds < 0 {
		return nil, Session{}, errors.New("wait_seconds cannot be negative")
	}
	sr := api.StartRequest{Task: in.Task, SystemPrompt: in.SystemPrompt, UserMessage: in.UserMessage, Model: in.Model, FallbackModels: in.FallbackModels,
		Mode: in.Mode, Workspace: in.Workspace, Profile: in.Profile, Prompt: in.Prompt, Approval: in.Approval, MaxIterations: in.MaxIterations,
		Timeout: in.Timeout, BudgetTokens: in.BudgetTokens, BudgetUSD: in.BudgetUSD, Verify: in.Verify, Tools: in.Tools, Labels: in.Labels, Thinking: in.Thinking}
	for _, m := range in.Messages {
		sr.Messages = append(sr.Messages, api.Message{Role: m.Role, Content: m.Content})
	}
	id, err := h.cfg.Start(ctx, c, req.Extra, sr)
	if err != nil {
		return nil, Session{}, err
	}
	st, timedOut, err := h.waitFor(ctx, c, id, seconds(in.WaitSeconds))
	if err != nil {
		return nil, Session{}, err
	}
	out := view(st)
	out.TimedOut = timedOut
	return nil, out, nil
}

func (h *handlers) get(ctx context.Context, req *mcp.CallToolRequest, in IDInput) (*mcp.CallToolResult, Session, error) {
	c, err := h.caller(ctx, req.Extra)
	if err != nil {
		return nil, Session{}, err
	}
	if err := checkID(in.ID); err != nil {
		return nil, Session{}, err
	}
	st, err := h.cfg.Service.Get(ctx, c, in.ID)
	if err != nil {
		return nil, Session{}, err
	}
	return nil, view(st), nil
}

func (h *handlers) wait(ctx context.Context, req *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, Session, error) {
	c, err := h.caller(ctx, req.Extra)
	if err != nil {
		return nil, Session{}, err
	}
	if err := checkID(in.ID); err != nil {
		return nil, Session{}, err
	}
	if in.TimeoutSeconds < 0 {
		return nil, Session{}, errors.New("timeout_seconds cannot be negative")
	}
	d := seconds(in.TimeoutSeconds)
	if in.TimeoutSeconds == 0 {
		d = time.Minute
	}
	st, timedOut, err := h.waitFor(ctx, c, in.ID, d)
	if err != nil {
		return nil, Session{}, err
	}
	out := view(st)
	out.TimedOut = timedOut
	return nil, out, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// stopped reports whether a session no longer runs: it ended, paused or
// waits for a person.
func stopped(st *loop.State) bool {
	return st.Status != loop.StatusRunning && st.Status != loop.StatusIdle
}

// waitFor returns the session's state once it stopped, or when d ran out
// (timedOut). It reads the log as it is committed: the state it returns is
// the fold of every event up to the one that stopped the session.
func (h *handlers) waitFor(ctx context.Context, c service.Caller, id string, d time.Duration) (st *loop.State, timedOut bool, err error) {
	st, err = h.cfg.Service.Get(ctx, c, id)
	if err != nil || stopped(st) || d <= 0 {
		return st, !stopped(st) && d > 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, min(d, h.cfg.MaxWait))
	defer cancel()
	events, err := h.cfg.Service.Events(wctx, c, id, st.Seq)
	if err != nil {
		return nil, false, err
	}
	for e, err := range events {
		if err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				return st, true, nil
			}
			return nil, false, err
		}
		if err := st.Apply(e); err != nil {
			return nil, false, err
		}
		if stopped(st) {
			return st, false, nil
		}
	}
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	return st, true, nil
}

func (h *handlers) list(ctx context.Context, req *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, List, error) {
	c, err := h.caller(ctx, req.Extra)
	if err != nil {
		return nil, List{}, err
	}
	f := store.Filter{Limit: 50}
	if in.Limit != 0 {
		if in.Limit < 1 || in.Limit > 500 {
			return nil, List{}, errors.New("limit must be a number from 1 to 500")
		}
		f.Limit = in.Limit
	}
	if in.Status != "" {
		status, err := loop.ParseStatus(in.Status)
		if err != nil {
			return nil, List{}, err
		}
		f.Status = []loop.Status{status}
	}
	list, err := h.cfg.Service.List(ctx, c, f)
	if err != nil {
		return nil, List{}, err
	}
	out := List{Sessions: make([]Summary, len(list))}
	for i, s := range list {
		out.Sessions[i] = Summary{ID: s.ID, Task: s.Task, Model: s.Model, Status: string(s.Status), Reason: string(s.Reason), Iteration: s.Iteration,
			Tokens: s.Tokens, CreatedAt: s.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: s.UpdatedAt.UTC().Format(time.RFC3339)}
	}
	return nil, out, nil
}

func (h *handlers) control(kind string) mcp.ToolHandlerFor[ControlInput, ControlResult] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in ControlInput) (*mcp.CallToolResult, ControlResult, error) {
		if err := checkID(in.ID); err != nil {
			return nil, ControlResult{}, err
		}
		if kind == "reply" && strings.TrimSpace(in.Text) == "" {
			return nil, ControlResult{}, errors.New("the reply is empty: give text")
		}
		return h.apply(ctx, req, Control{SessionID: in.ID, Kind: kind, Text: in.Text})
	}
}

func (h *handlers) decide(ctx context.Context, req *mcp.CallToolRequest, in DecideInput) (*mcp.CallToolResult, ControlResult, error) {
	if err := checkID(in.ID); err != nil {
		return nil, ControlResult{}, err
	}
	if in.CallID == "" {
		return nil, ControlResult{}, errors.New("call_id is required: get_session lists the pending approvals")
	}
	if in.ArgsHash == "" {
		// The decision is for the arguments pending now: read them.
		c, err := h.caller(ctx, req.Extra)
		if err != nil {
			return nil, ControlResult{}, err
		}
		st, err := h.cfg.Service.Get(ctx, c, in.ID)
		if err != nil {
			return nil, ControlResult{}, err
		}
		var pending []string
		for _, p := range st.PendingApprovals {
			if p.CallID == in.CallID {
				in.ArgsHash = p.ArgsHash
			}
			pending = append(pending, p.CallID+" ("+p.Name+")")
		}
		if in.ArgsHash == "" {
			if len(pending) == 0 {
				return nil, ControlResult{}, fmt.Errorf("session %s has no tool call waiting for approval (it is %s)", in.ID, st.Status)
			}
			return nil, ControlResult{}, fmt.Errorf("session %s has no pending call %q; waiting: %s", in.ID, in.CallID, strings.Join(pending, ", "))
		}
	}
	approve := in.Approve
	return h.apply(ctx, req, Control{SessionID: in.ID, Kind: "decide", CallID: in.CallID,
		Decision: api.Decision{Approve: &approve, ArgsHash: in.ArgsHash, Reason: in.Reason}})
}

func (h *handlers) apply(ctx context.Context, req *mcp.CallToolRequest, ctl Control) (*mcp.CallToolResult, ControlResult, error) {
	c, err := h.caller(ctx, req.Extra)
	if err != nil {
		return nil, ControlResult{}, err
	}
	var res api.ControlResult
	if h.cfg.Control != nil {
		res, err = h.cfg.Control(ctx, c, req.Extra, ctl)
	} else {
		res, err = ApplyControl(ctx, h.cfg.Service, c, ctl)
	}
	if err != nil {
		return nil, ControlResult{}, err
	}
	return nil, ControlResult{ID: res.ID, Applied: res.Applied, Outcome: res.Outcome, Status: res.Status}, nil
}

// ApplyControl applies ctl through the service.
func ApplyControl(ctx context.Context, svc *service.Service, c service.Caller, ctl Control) (api.ControlResult, error) {
	var res *service.Result
	var err error
	switch ctl.Kind {
	case "pause":
		res, err = svc.Pause(ctx, c, ctl.SessionID, ctl.Text)
	case "resume":
		res, err = svc.Resume(ctx, c, ctl.SessionID, ctl.Text)
	case "terminate":
		res, err = svc.Terminate(ctx, c, ctl.SessionID, ctl.Text)
	case "reply":
		res, err = svc.Reply(ctx, c, ctl.SessionID, ctl.Text)
	case "decide":
		d := loop.ApprovalDecision{CallID: ctl.CallID, ArgsHash: ctl.Decision.ArgsHash, Reason: ctl.Decision.Reason, EditedInput: ctl.Decision.Arguments}
		if ctl.Decision.Approve != nil {
			d.Approved = *ctl.Decision.Approve
		}
		res, err = svc.Decide(ctx, c, ctl.SessionID, d)
	default:
		return api.ControlResult{}, fmt.Errorf("unknown control %q", ctl.Kind)
	}
	if err != nil {
		return api.ControlResult{}, err
	}
	out := api.ControlResult{ID: res.ID, Applied: res.Applied, Outcome: res.Outcome}
	if res.State != nil {
		out.Status = string(res.State.Status)
	} else if res.Session != nil {
		out.Status = string(loop.StatusRunning)
	}
	return out, nil
}

// view is a state as the tools return it.
func view(st *loop.State) Session {
	out := Session{ID: st.ID, Task: st.Task, Model: st.Model, Status: string(st.Status), Reason: string(st.Reason), Detail: st.Detail,
		Answer: st.Answer, Partial: st.Partial, Question: st.Question, Iteration: st.CurrentIteration, MaxIterations: st.MaxIterations,
		Tokens: st.Usage.InputTokens + st.Usage.OutputTokens, CostUSD: st.CostUSD, LastSeq: st.Seq, Workspace: st.Workspace}
	for _, p := range st.PendingApprovals {
		out.PendingApprovals = append(out.PendingApprovals, Approval{CallID: p.CallID, Tool: p.Name, Arguments: string(p.Input), ArgsHash: p.ArgsHash})
	}
	return out
}

// resourceURI is agentloop://sessions/{id} or …/{id}/events.
var resourceURI = regexp.MustCompile(`^agentloop://sessions/([A-Za-z0-9_-]{1,64})(/events)?$`)

func (h *handlers) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	m := resourceURI.FindStringSubmatch(uri)
	if m == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	c, err := h.caller(ctx, req.Extra)
	if err != nil {
		return nil, err
	}
	st, err := h.cfg.Service.Get(ctx, c, m[1])
	if errors.Is(err, service.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	if m[2] == "" {
		b, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
	}
	// The log up to the state just read: a consistent prefix, however the
	// session moves on meanwhile.
	var b strings.Builder
	after := int64(0)
	for after < st.Seq {
		page, err := h.cfg.Service.EventsPage(ctx, c, m[1], after, 1000)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if e.Seq > st.Seq {
				break
			}
			line, err := json.Marshal(e)
			if err != nil {
				return nil, err
			}
			b.Write(line)
			b.WriteByte('\n')
			after = e.Seq
		}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/x-ndjson", Text: b.String()}}}, nil
}
