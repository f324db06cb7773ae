package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

// CreateRequest is the body of POST /v1/sessions. A session is asked one of three
// ways, told apart by shape: a task, a conversation (messages), or a
// system prompt and a user message.
type CreateRequest struct {
	Task         string          `json:"task,omitempty"`
	Messages     []model.Message `json:"messages,omitempty"`
	SystemPrompt string          `json:"system_prompt,omitempty"`
	UserMessage  string          `json:"user_message,omitempty"`
	Model        string          `json:"model,omitempty"`
	Mode         string          `json:"mode,omitempty"`
	Workspace    string          `json:"workspace,omitempty"`
	Profile      string          `json:"profile,omitempty"`
	// Prompt names a stored system prompt: "name" (its latest version) or
	// "name@3"; the session records which version it ran with.
	Prompt        string   `json:"prompt,omitempty"`
	Approval      string   `json:"approval,omitempty"`
	MaxIterations int      `json:"max_iterations,omitempty"`
	Timeout       string   `json:"timeout,omitempty"`
	BudgetTokens  int      `json:"budget_tokens,omitempty"`
	BudgetUSD     float64  `json:"budget_usd,omitempty"`
	Verify        []string `json:"verify,omitempty"`
	// Tools narrows the session's tools to these names.
	Tools []string `json:"tools,omitempty"`
	// Protocol is a protocol file of the server's (local servers only, as
	// scripted models).
	Protocol string            `json:"protocol,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Thinking lets a reasoning model think: low, medium, high or a
	// token budget (Anthropic).
	Thinking string `json:"thinking,omitempty"`
}

// Created is the answer to a create.
type Created struct {
	ID     string      `json:"id"`
	Status loop.Status `json:"status"`
	URL    string      `json:"url"`
}

func invalid(format string, a ...any) error {
	return &service.Error{Kind: service.ErrInvalid, Msg: fmt.Sprintf(format, a...)}
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if err := s.decode(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	c := callerOf(r.Context())
	task, err := s.task(&req, s.mayRunUnasked(r, c))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Prompt != "" {
		name, version, ok := promptRef(req.Prompt)
		if !ok {
			problem(w, http.StatusBadRequest, fmt.Sprintf("prompt %q: give a name, or name@version", req.Prompt))
			return
		}
		if task.SystemPrompt != "" {
			problem(w, http.StatusBadRequest, `give "prompt" or "system_prompt", not both`)
			return
		}
		p, err := s.svc.Prompt(r.Context(), c, name, version)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		task.SystemPrompt = p.Text
		if task.Labels == nil {
			task.Labels = map[string]string{}
		}
		task.Labels["prompt"] = fmt.Sprintf("%s@%d", p.Name, p.Version)
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		// The same key from the same tenant names the same session: a
		// replayed request finds the session the first one started.
		h := sha256.Sum256([]byte(c.Tenant + "\x00" + key))
		task.ID = "idem-" + hex.EncodeToString(h[:10])
		if st, err := s.svc.Get(r.Context(), c, task.ID); err == nil {
			writeJSON(w, http.StatusOK, Created{ID: st.ID, Status: st.Status, URL: "/v1/sessions/" + st.ID})
			return
		}
	}
	if why, wait, err := s.overQuota(r, c); err != nil {
		s.fail(w, r, err)
		return
	} else if why != "" {
		tooMany(w, why, wait)
		return
	}
	if task.ID == "" {
		task.ID = loop.RandomID()
	}
	if err := s.workspace(c, &task); err != nil {
		s.fail(w, r, err)
		return
	}
	started, err := s.svc.Start(r.Context(), c, task)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+started.ID)
	writeJSON(w, http.StatusCreated, Created{ID: started.ID, Status: loop.StatusRunning, URL: "/v1/sessions/" + started.ID})
}

// mayRunUnasked reports whether this caller may start a session whose
// tools run without asking: on a server started with --yes anyone who may
// start sessions, else only an admin key. The local caller of a server
// without keys is held to the server's setting, so a request can never
// widen what the person who started the server chose.
func (s *Server) mayRunUnasked(r *http.Request, c service.Caller) bool {
	return s.cfg.Defaults.Approval == "auto" || (c.Has(service.ScopeAdmin) && r.Header.Get("Authorization") != "")
}

// Bounds on verification commands a request supplies.
const (
	maxVerifyCommands = 16
	maxVerifyLength   = 4096
)

// task turns a create request into a loop.Task with the server's
// defaults. A request may narrow what the server allows, never widen it:
// mayRunUnasked says whether it may ask for tools that run without asking.
func (s *Server) task(req *CreateRequest, mayRunUnasked bool) (loop.Task, error) {
	d := s.cfg.Defaults
	var t loop.Task
	asked := 0
	if req.Task != "" {
		asked++
		t.Prompt = req.Task
	}
	if len(req.Messages) > 0 {
		asked++
		t.Messages = req.Messages
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
	spec := firstSet(req.Model, d.Model)
	if strings.HasPrefix(req.Model, "script:") && req.Model != d.Model && !d.AllowScripts {
		// Refused before the path is looked at: an answer about the file
		// would tell a caller what exists on the server.
		return t, &service.Error{Kind: service.ErrForbidden, Msg: "scripted models (script:PATH) name a file of the server's and are refused unless the server was started with --allow-script-models"}
	}
	spec, err := assemble.ModelSpec(spec)
	if err != nil {
		return t, invalid("model: %v", err)
	}
	t.Model, t.Endpoint, t.Profile = spec, d.Endpoint, firstSet(req.Profile, d.Profile)
	if req.Model != "" && req.Model != d.Model {
		t.Endpoint = "" // another model: its provider's own endpoint
	}
	if req.Thinking != "" {
		if _, _, err := provider.ParseThinking(req.Thinking); err != nil {
			return t, invalid("%v", err)
		}
		t.ModelOptions = &loop.ModelOptions{Thinking: req.Thinking}
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
	case "auto":
		if !mayRunUnasked {
			return t, &service.Error{Kind: service.ErrForbidden, Msg: `approval "auto" refused: this server asks before writing and executing tools run (it was started without --yes), and only an admin key may ask for more; leave approval out, or start the server with --yes`}
		}
	case "ask":
	default:
		return t, invalid(`approval %q: use "auto" (tools run without asking) or "ask" (writing tools wait for POST …/approvals/{call})`, req.Approval)
	}
	if len(req.Verify) > 0 {
		// Verification commands run without an approval of their own, so
		// only a session whose tools run unasked may bring its own.
		if t.Approval != "auto" {
			return t, &service.Error{Kind: service.ErrForbidden, Msg: `"verify" refused: verification commands run without asking, and this session asks before commands run (approval "ask"); run the checks as the session's own commands, or use a session with approval "auto"`}
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
	if req.MaxIterations < 0 || req.BudgetTokens < 0 || req.BudgetUSD < 0 {
		return t, invalid("limits cannot be negative")
	}
	limits := loop.Limits{MaxIterations: firstInt(req.MaxIterations, d.MaxIterations, loop.DefaultMaxIterations),
		BudgetTokens: req.BudgetTokens, BudgetUSD: req.BudgetUSD, NoProgressAfter: 5, MaxToolCallsPerTurn: 10,
		ModelCallTimeout: 5 * time.Minute, Timeout: 30 * time.Minute}
	if req.Timeout != "" {
		if limits.Timeout, err = time.ParseDuration(req.Timeout); err != nil || limits.Timeout <= 0 {
			return t, invalid("timeout %q: give a duration such as \"10m\"", req.Timeout)
		}
	}
	limits.ContextTokens = assemble.ContextWindow(spec, nil)
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
	if req.Protocol != "" {
		if !d.AllowScripts {
			return t, &service.Error{Kind: service.ErrForbidden, Msg: "protocol files name a file of the server's and are refused unless the server was started with --allow-script-models"}
		}
		if t.Protocol, err = assemble.AbsPath(req.Protocol); err != nil {
			return t, invalid("protocol: %v", err)
		}
	}
	return t, nil
}

// validID refuses IDs that are not session IDs before they reach a store
// or a path.
var validID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (s *Server) sessionID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !validID.MatchString(id) {
		problem(w, http.StatusBadRequest, fmt.Sprintf("%q is not a session ID (letters, digits, - and _)", id))
		return "", false
	}
	return id, true
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	s.part(w, r, func(st *loop.State) any { return st })
}

// ListPage is GET /v1/sessions.
type ListPage struct {
	Sessions   []loop.Summary `json:"sessions"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.Filter{Limit: 50}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			problem(w, http.StatusBadRequest, "limit must be a number from 1 to 500")
			return
		}
		f.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "o:"))
		if err != nil || err2 != nil || n < 0 {
			problem(w, http.StatusBadRequest, "cursor is not one this server gave out")
			return
		}
		f.Offset = n
	}
	for name, dst := range map[string]*time.Time{"created_after": &f.CreatedAfter, "created_before": &f.CreatedBefore} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				problem(w, http.StatusBadRequest, name+" must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z")
				return
			}
			*dst = t
		}
	}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			problem(w, http.StatusBadRequest, fmt.Sprintf("label %q: give key=value", l))
			return
		}
		if f.Labels == nil {
			f.Labels = map[string]string{}
		}
		f.Labels[k] = v
	}
	if ws := q.Get("workspace"); ws != "" {
		if root := s.cfg.Defaults.Workspaces; root != "" && !filepath.IsAbs(ws) {
			ws = filepath.Join(tenantRoot(root, callerOf(r.Context()).Tenant), ws)
		}
		f.Workspace = filepath.Clean(ws)
	}
	for _, st := range strings.Split(q.Get("status"), ",") {
		if st = strings.TrimSpace(st); st != "" {
			f.Status = append(f.Status, loop.Status(st))
		}
	}
	list, err := s.svc.List(r.Context(), callerOf(r.Context()), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page := ListPage{Sessions: list}
	if page.Sessions == nil {
		page.Sessions = []loop.Summary{}
	}
	if len(list) == f.Limit {
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(f.Offset+f.Limit)))
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	c := callerOf(r.Context())
	st, err := s.svc.Get(r.Context(), c, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !st.Status.Finished() {
		problem(w, http.StatusConflict, fmt.Sprintf("session %s is %s: only ended sessions are deleted; terminate it first", id, st.Status))
		return
	}
	if err := s.deleteSession1(r, c, id, st.Workspace); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) plan(w http.ResponseWriter, r *http.Request) {
	s.part(w, r, func(st *loop.State) any { return map[string]any{"plan": st.Plan, "steps": st.Steps} })
}

func (s *Server) memory(w http.ResponseWriter, r *http.Request) {
	s.part(w, r, func(st *loop.State) any {
		m := st.Memory
		if m == nil {
			return map[string]any{"memory": map[string]any{}}
		}
		return map[string]any{"memory": m}
	})
}

// iterationUsage is one iteration's share of the usage.
type iterationUsage struct {
	N       int         `json:"iteration"`
	Usage   model.Usage `json:"usage"`
	CostUSD float64     `json:"cost_usd"`
}

func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	s.part(w, r, func(st *loop.State) any {
		per := make([]iterationUsage, 0, len(st.Iterations))
		for _, it := range st.Iterations {
			per = append(per, iterationUsage{it.N, it.Usage, it.CostUSD})
		}
		return map[string]any{"usage": st.Usage, "cost_usd": st.CostUSD, "model_calls": st.InteractionCount, "tool_calls": st.ToolCallCount, "iterations": per}
	})
}

func (s *Server) verification(w http.ResponseWriter, r *http.Request) {
	s.part(w, r, func(st *loop.State) any {
		return map[string]any{"verification": st.Verification, "commands": st.Verify}
	})
}

func (s *Server) part(w http.ResponseWriter, r *http.Request, pick func(*loop.State) any) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	st, err := s.svc.Get(r.Context(), callerOf(r.Context()), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pick(st))
}

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

// prune deletes the caller's ended sessions last changed before
// ?ended_before= (RFC 3339, or a duration ago such as 720h).
func (s *Server) prune(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query().Get("ended_before")
	before, err := time.Parse(time.RFC3339, v)
	if err != nil {
		d, derr := time.ParseDuration(v)
		if derr != nil || d <= 0 {
			problem(w, http.StatusBadRequest, `ended_before must be a time (2026-01-02T15:04:05Z) or an age ("720h")`)
			return
		}
		before = time.Now().Add(-d)
	}
	c := callerOf(r.Context())
	if !c.Has(service.ScopeWrite) {
		problem(w, http.StatusForbidden, "pruning sessions needs the sessions:write scope")
		return
	}
	deleted, workspaces := []string{}, []string{}
	for offset := 0; ; offset += 500 {
		list, err := s.svc.List(r.Context(), c, store.Filter{Limit: 500, Offset: offset})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, sum := range list {
			if sum.Status.Finished() && sum.UpdatedAt.Before(before) {
				deleted = append(deleted, sum.ID)
				workspaces = append(workspaces, sum.Workspace)
			}
		}
		if len(list) < 500 {
			break
		}
	}
	for i, id := range deleted {
		if err := s.deleteSession1(r, c, id, workspaces[i]); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": deleted})
}
