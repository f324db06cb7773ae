package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

func invalid(format string, a ...any) error {
	return &service.Error{Kind: service.ErrInvalid, Msg: fmt.Sprintf(format, a...)}
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req api.StartRequest
	if err := s.decode(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	s.start(w, r, req)
}

// startDefaults is what a session a request starts (or forks) gets from
// this server unless the request says otherwise, and which models a
// request may name.
func (s *Server) startDefaults() assemble.StartDefaults {
	d := s.cfg.Defaults
	notifyURLs, notifyPrivate := s.notifyDefaults()
	return assemble.StartDefaults{Model: d.Model, FallbackModels: d.FallbackModels, Endpoint: d.Endpoint, Profile: d.Profile, Approval: d.Approval,
		MaxIterations: d.MaxIterations, AllowFiles: d.AllowScripts, NotifyURLs: notifyURLs, NotifyPrivate: notifyPrivate, Profiles: s.profiles()}
}

// start starts the session a request asks for, as the caller of r: the
// one path from a start request to a running session.
func (s *Server) start(w http.ResponseWriter, r *http.Request, req api.StartRequest) {
	c := callerOf(r.Context())
	task, err := s.startDefaults().Task(req, s.mayRunUnasked(r, c))
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
		// The request's own fingerprint, recorded as a label: the same key
		// with another body is a client's mistake, not a replay.
		body, _ := json.Marshal(req)
		fp := sha256.Sum256(body)
		if task.Labels == nil {
			task.Labels = map[string]string{}
		}
		task.Labels[idempotencyLabel] = hex.EncodeToString(fp[:8])
		if st, err := s.svc.Get(r.Context(), c, task.ID); err == nil {
			if was := st.Labels[idempotencyLabel]; was != "" && was != task.Labels[idempotencyLabel] {
				problem(w, http.StatusUnprocessableEntity, "Idempotency-Key "+quote(key)+" was used for a different request (session "+st.ID+"): use a new key for a new request")
				return
			}
			writeJSON(w, http.StatusOK, api.Created{ID: st.ID, Status: string(st.Status), URL: "/v1/sessions/" + st.ID})
			return
		}
	}
	unlock, ok := s.roomToStart(w, r, c)
	if !ok {
		return
	}
	defer unlock()
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
	writeStarted(w, started.ID)
}

// writeStarted answers a request that started session id running: 201,
// its URL in Location and the body.
func writeStarted(w http.ResponseWriter, id string) {
	w.Header().Set("Location", "/v1/sessions/"+id)
	writeJSON(w, http.StatusCreated, api.Created{ID: id, Status: string(loop.StatusRunning), URL: "/v1/sessions/" + id})
}

// mayRunUnasked reports whether this caller may start a session whose
// tools run without asking: on a server started with --yes anyone who may
// start sessions, else only an admin key. The local caller of a server
// without keys is held to the server's setting, so a request can never
// widen what the person who started the server chose.
func (s *Server) mayRunUnasked(r *http.Request, c service.Caller) bool {
	return s.cfg.Defaults.Approval == "auto" || (c.Has(service.ScopeAdmin) && r.Header.Get("Authorization") != "")
}

// idempotencyLabel holds the fingerprint of the request that started a
// session with an Idempotency-Key.
const idempotencyLabel = "idempotency_request"

// validID refuses IDs that are not session IDs before they reach a store
// or a path.
var validID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (s *Server) sessionID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	return id, isSessionID(w, "", id)
}

// isSessionID reports whether id, given as name (a query parameter;
// empty for the path's), is a session ID, else answers 400 saying so.
func isSessionID(w http.ResponseWriter, name, id string) bool {
	if validID.MatchString(id) {
		return true
	}
	what := fmt.Sprintf("%q", id)
	if name != "" {
		what = fmt.Sprintf("%s=%q", name, id) // the query parameter it came in
	}
	problem(w, http.StatusBadRequest, what+" is not a session ID (letters, digits, - and _)")
	return false
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	s.part(w, r, func(st *loop.State) any { return st })
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
	if from := q.Get("forked_from"); from != "" {
		if !isSessionID(w, "forked_from", from) {
			return
		}
		f.ForkedFrom = from
	}
	switch q.Get("unfinished") {
	case "", "false":
	case "true":
		f.Unfinished = true
	default:
		problem(w, http.StatusBadRequest, fmt.Sprintf("unfinished %q: give true or false", q.Get("unfinished")))
		return
	}
	if ws := q.Get("workspace"); ws != "" {
		if root := s.cfg.Defaults.Workspaces; root != "" && !filepath.IsAbs(ws) {
			ws = filepath.Join(tenantRoot(root, callerOf(r.Context()).Tenant), ws)
		}
		f.Workspace = filepath.Clean(ws)
	}
	for _, st := range strings.Split(q.Get("status"), ",") {
		if st = strings.TrimSpace(st); st != "" {
			status, err := loop.ParseStatus(st)
			if err != nil {
				problem(w, http.StatusBadRequest, err.Error())
				return
			}
			f.Status = append(f.Status, status)
		}
	}
	limit := f.Limit
	f.Limit++ // one more than asked for says whether there is a next page
	list, err := s.svc.List(r.Context(), callerOf(r.Context()), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	more := len(list) > limit
	list = list[:min(len(list), limit)]
	page := api.ListPage{Sessions: make([]api.Summary, len(list))}
	for i, sum := range list {
		page.Sessions[i] = summaryOf(sum)
	}
	if more {
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(f.Offset+limit)))
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

// summaryOf is a session's summary in its wire form.
func summaryOf(s loop.Summary) api.Summary {
	out := api.Summary{ID: s.ID, Tenant: s.Tenant, Task: s.Task, Model: s.Model, Status: string(s.Status), Reason: string(s.Reason),
		Iteration: s.Iteration, MaxIterations: s.MaxIterations, Tokens: s.Tokens, CostUSD: s.CostUSD, CreatedAt: s.CreatedAt,
		UpdatedAt: s.UpdatedAt, LastSeq: s.LastSeq, Workspace: s.Workspace, Labels: s.Labels}
	if f := s.ForkedFrom; f != nil {
		out.ForkedFrom = &api.ForkedFrom{ID: f.ID, Iteration: f.Iteration}
	}
	return out
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

// profiles looks up a session's profile: the server's config file's, or a
// built-in one.
func (s *Server) profiles() func(string) (config.Profile, error) {
	if p := s.cfg.Defaults.Profiles; p != nil {
		return p
	}
	return (*config.Config)(nil).Profile
}
