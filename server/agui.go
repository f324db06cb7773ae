package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
)

// AG-UI (the Agent–User Interaction protocol, @ag-ui/core 1.0) over a
// session's log:
//
//	POST /v1/agui                 run: RunAgentInput in, AG-UI events out (SSE)
//	GET  /v1/sessions/{id}/agui   follow a session from the start (or ?after=)
//
// A thread is a session: the caller's newest session labelled
// agui_thread=threadId, or the session whose ID is the threadId. A run on
// a new thread starts one (so does a run on a thread whose session has
// ended: the conversation goes on in a new session), a run on a thread
// whose session waits or runs sends the last user message as a reply, and
// a run with resume entries decides the approvals the last run was
// interrupted for. The run is the stretch of
// the log up to the session's next stop.
//
//	log                                  AG-UI
//	(stream opens)                       RUN_STARTED
//	session.started, message.added user  TEXT_MESSAGE_* role user (following only)
//	iteration.started / .ended           STEP_STARTED / STEP_FINISHED "iteration N"
//	token deltas, model.responded text  TEXT_MESSAGE_START/CONTENT/END
//	model.responded tool calls           TOOL_CALL_START/ARGS/END
//	tool.finished                        TOOL_CALL_RESULT
//	plan.updated                         STATE_SNAPSHOT, then STATE_DELTA (JSON Patch of {"plan": …})
//	session.ended completed              RUN_FINISHED (result: status, reason, answer)
//	session.ended terminated             RUN_FINISHED outcome cancelled
//	session.ended failed / error         RUN_ERROR (code: the reason)
//	session.waiting for approval         RUN_FINISHED outcome interrupt (one per pending call)
//	session.waiting, session.paused      RUN_FINISHED (result: status, reason, question)
//
// Tools a client offers (RunAgentInput.tools) are refused: the session's
// tools are the server's. forwardedProps may carry start options (model,
// approval, workspace, max_iterations, tools, …) as POST /v1/sessions
// takes them.

// aguiThreadLabel labels a session started for an AG-UI thread.
const aguiThreadLabel = "agui_thread"

// aguiInput is RunAgentInput: what a run is asked with. Fields this
// server does not use are allowed, as the protocol allows them.
type aguiInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	Messages       []aguiMessage   `json:"messages"`
	Tools          []aguiTool      `json:"tools"`
	Context        []aguiContext   `json:"context"`
	ForwardedProps json.RawMessage `json:"forwardedProps"`
	Resume         []aguiResume    `json:"resume"`
}

type aguiMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []aguiToolCall  `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Error      string          `json:"error,omitempty"`
}

type aguiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type aguiTool struct {
	Name string `json:"name"`
}

type aguiContext struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

type aguiResume struct {
	InterruptID string `json:"interruptId"`
	Status      string `json:"status"` // resolved or cancelled
	Payload     struct {
		Approved  *bool           `json:"approved"`
		Reason    string          `json:"reason"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"payload"`
}

// startOptions are the settings of POST /v1/sessions a protocol request
// may carry beside its conversation.
type startOptions struct {
	Model          string            `json:"model,omitempty"`
	FallbackModels []string          `json:"fallback_models,omitempty"`
	Mode           string            `json:"mode,omitempty"`
	Workspace      string            `json:"workspace,omitempty"`
	Profile        string            `json:"profile,omitempty"`
	Prompt         string            `json:"prompt,omitempty"`
	SystemPrompt   string            `json:"system_prompt,omitempty"`
	Approval       string            `json:"approval,omitempty"`
	MaxIterations  int               `json:"max_iterations,omitempty"`
	Timeout        string            `json:"timeout,omitempty"`
	BudgetTokens   int               `json:"budget_tokens,omitempty"`
	BudgetUSD      float64           `json:"budget_usd,omitempty"`
	Verify         []string          `json:"verify,omitempty"`
	Tools          []string          `json:"tools,omitempty"`
	Protocol       string            `json:"protocol,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Thinking       string            `json:"thinking,omitempty"`
}

// inherit takes the model and approval of a conversation's ended session
// where the request names none: the conversation goes on as it was.
func (o *startOptions) inherit(st *loop.State) {
	o.Model = firstSet(o.Model, st.Model)
	if st.Approval == "ask" || st.Approval == "auto" {
		o.Approval = firstSet(o.Approval, st.Approval)
	}
}

// request is the start request of a conversation with these options.
func (o startOptions) request(msgs []api.Message) api.StartRequest {
	req := api.StartRequest{Model: o.Model, FallbackModels: o.FallbackModels, Mode: o.Mode, Workspace: o.Workspace, Profile: o.Profile,
		Prompt: o.Prompt, Approval: o.Approval, MaxIterations: o.MaxIterations, Timeout: o.Timeout, BudgetTokens: o.BudgetTokens,
		BudgetUSD: o.BudgetUSD, Verify: o.Verify, Tools: o.Tools, Protocol: o.Protocol, Thinking: o.Thinking, Labels: map[string]string{}}
	for k, v := range o.Labels {
		req.Labels[k] = v
	}
	if len(msgs) == 1 && msgs[0].Role == "user" && o.SystemPrompt == "" {
		req.Task = msgs[0].Content
		return req
	}
	if o.SystemPrompt != "" {
		msgs = append([]api.Message{{Role: "system", Content: o.SystemPrompt}}, msgs...)
	}
	req.Messages = msgs
	return req
}

// decodeLoose reads a JSON body that may carry fields this server does
// not use (protocols allow them), refusing bodies that are too large or
// not JSON with a clear message.
func (s *Server) decodeLoose(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	err := dec.Decode(v)
	var tooBig *http.MaxBytesError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooBig):
		return fmt.Errorf("%w (limit %d bytes)", errTooLarge, tooBig.Limit)
	case errors.As(err, &typ):
		return invalid("field %q must be %s, not %s", typ.Field, typ.Type, typ.Value)
	default:
		return invalid("the body is not valid JSON: %v", err)
	}
}

// aguiText is the text of an AG-UI message's content: a string, or the
// text parts of an array (other parts are refused: sessions take text).
func aguiText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part %q: sessions take text only", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// messages converts the run's conversation for a new session.
func (in *aguiInput) messages() ([]api.Message, error) {
	var out []api.Message
	if len(in.Context) > 0 {
		var b strings.Builder
		b.WriteString("Context for this conversation:")
		for _, c := range in.Context {
			fmt.Fprintf(&b, "\n- %s: %s", c.Description, c.Value)
		}
		out = append(out, api.Message{Role: "system", Content: b.String()})
	}
	answered := map[string]bool{}
	for _, m := range in.Messages {
		if m.Role == "tool" {
			answered[m.ToolCallID] = true
		}
	}
	for i, m := range in.Messages {
		text, err := aguiText(m.Content)
		if err != nil {
			return nil, invalid("messages[%d]: %v", i, err)
		}
		switch m.Role {
		case "user", "system":
			out = append(out, api.Message{Role: m.Role, Content: text})
		case "developer":
			out = append(out, api.Message{Role: "system", Content: text})
		case "assistant":
			am := api.Message{Role: "assistant", Content: text}
			for _, c := range m.ToolCalls {
				if !answered[c.ID] {
					continue // never run: a conversation holds only answered calls
				}
				args := json.RawMessage(c.Function.Arguments)
				if !json.Valid(args) {
					return nil, invalid("messages[%d]: the arguments of tool call %s are not JSON", i, c.ID)
				}
				am.ToolCalls = append(am.ToolCalls, api.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
			}
			out = append(out, am)
		case "tool":
			out = append(out, api.Message{Role: "tool", Content: text, ToolCallID: m.ToolCallID, IsError: m.Error != ""})
		case "activity", "reasoning":
			// Shown to people, not part of the conversation.
		default:
			return nil, invalid("messages[%d]: role %q is not an AG-UI message role", i, m.Role)
		}
	}
	return out, nil
}

// aguiRun runs a session for an AG-UI thread and streams the run.
func (s *Server) aguiRun(w http.ResponseWriter, r *http.Request) {
	var in aguiInput
	if err := s.decodeLoose(w, r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case in.ThreadID == "" || in.RunID == "":
		problem(w, http.StatusBadRequest, "a run needs a threadId and a runId (RunAgentInput)")
		return
	case len(in.ThreadID) > 200:
		problem(w, http.StatusBadRequest, "threadId is longer than 200 characters")
		return
	case len(in.Tools) > 0:
		problem(w, http.StatusBadRequest, fmt.Sprintf("this agent runs its own tools on the server; tools offered by the client (%q …) are not supported: send \"tools\": []", in.Tools[0].Name))
		return
	}
	var opts startOptions
	if len(in.ForwardedProps) > 0 && string(in.ForwardedProps) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(in.ForwardedProps)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			problem(w, http.StatusBadRequest, "forwardedProps: "+strings.TrimPrefix(err.Error(), "json: ")+" (it takes the start options of POST /v1/sessions: model, approval, workspace, max_iterations, tools, …)")
			return
		}
	}
	st, found, err := s.sessionFor(r, aguiThreadLabel, in.ThreadID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var id string
	var rg streamRange
	var deltas <-chan feed.Delta
	if found && st.Status.Finished() && len(in.Resume) == 0 {
		found = false // the conversation goes on in a new session, as the last one was set up
		opts.inherit(st)
	}
	if found {
		id = st.ID
		// Subscribed before the session moves: its next reply's deltas
		// all arrive.
		deltas = s.subscribeDeltas(ctx, id)
		rg = streamRange{after: st.Seq, liveAfter: st.Seq, stopAt: st.Seq + 1}
		if !s.aguiContinue(w, r, st, &in) {
			return
		}
	} else {
		msgs, err := in.messages()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		req := opts.request(msgs)
		req.Labels[aguiThreadLabel] = in.ThreadID
		if id, found = s.startInternally(w, r, req); !found {
			return
		}
		deltas = s.subscribeDeltas(ctx, id)
		rg = streamRange{after: 0, liveAfter: 0, stopAt: 1}
	}
	flusher, ok := openStream(w)
	if !ok {
		return
	}
	out := &sseOut{w: w}
	p := newAGUI(out, id, in.ThreadID, in.RunID, false, in.Messages)
	p.runStarted()
	s.project(ctx, w, flusher, out, id, rg, deltas, p)
}

// aguiContinue carries a thread's session on with a new run: resume
// entries decide the approvals it waits for, else the last message (a
// user's) is a reply. On refusal the answer has been written.
func (s *Server) aguiContinue(w http.ResponseWriter, r *http.Request, st *loop.State, in *aguiInput) bool {
	if len(in.Resume) > 0 {
		for i, res := range in.Resume {
			var pending *loop.PendingApproval
			for j := range st.PendingApprovals {
				if st.PendingApprovals[j].CallID == res.InterruptID {
					pending = &st.PendingApprovals[j]
				}
			}
			if pending == nil {
				problem(w, http.StatusConflict, fmt.Sprintf("resume[%d]: session %s has no pending approval %q (it waits for %d)", i, st.ID, res.InterruptID, len(st.PendingApprovals)))
				return false
			}
			approve := res.Status == "resolved" && (res.Payload.Approved == nil || *res.Payload.Approved)
			d := api.Decision{Approve: &approve, ArgsHash: pending.ArgsHash, Reason: res.Payload.Reason, Arguments: res.Payload.Arguments}
			if !s.decideInternally(w, r, st.ID, pending.CallID, d) {
				return false
			}
		}
		return true
	}
	if len(in.Messages) == 0 || in.Messages[len(in.Messages)-1].Role != "user" {
		problem(w, http.StatusBadRequest, fmt.Sprintf("thread %s has a session (%s, %s): a new run on it sends its last message, a user's, as a reply; or resume its interrupts", in.ThreadID, st.ID, st.Status))
		return false
	}
	text, err := aguiText(in.Messages[len(in.Messages)-1].Content)
	if err != nil {
		problem(w, http.StatusBadRequest, "the last message: "+err.Error())
		return false
	}
	return s.replyInternally(w, r, st.ID, text)
}

// aguiFollow streams a session as one AG-UI run, from its start (or
// after ?after=) to its next stop.
func (s *Server) aguiFollow(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	after, err := seqParam(r)
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	deltas := s.subscribeDeltas(ctx, id)
	st, err := s.svc.Get(ctx, callerOf(ctx), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rg := followRange(st, after)
	flusher, ok := openStream(w)
	if !ok {
		return
	}
	out := &sseOut{w: w}
	thread := firstSet(st.Labels[aguiThreadLabel], id)
	p := newAGUI(out, id, thread, "follow-"+id+"-"+strconv.FormatInt(after, 10), true, nil)
	p.runStarted()
	if after >= st.Seq && rg.stopAt == st.Seq {
		p.stopped(st.Status, st.Reason, "", "", st.Seq) // nothing more will come
		flusher.Flush()
		return
	}
	s.project(ctx, w, flusher, out, id, rg, deltas, p)
}

// subscribeDeltas is the session's token deltas until ctx ends (nil
// without a delta stream: replies are then sent whole).
func (s *Server) subscribeDeltas(ctx context.Context, id string) <-chan feed.Delta {
	if s.cfg.Deltas == nil {
		return nil
	}
	return s.cfg.Deltas.Subscribe(ctx, id, 1024)
}

// agui projects a session's log as AG-UI events.
type agui struct {
	out                  *sseOut
	session, thread, run string
	follow               bool // show the users' messages too
	text                 replyText
	plan                 any // the last state sent, nil before the first
	step                 string
	pending              []loop.ApprovalRequested
	// shown is the conversation as the client has assembled it, kept to
	// correct it (MESSAGES_SNAPSHOT) when deltas were lost.
	shown []map[string]any
	input []aguiMessage
}

func newAGUI(out *sseOut, session, thread, run string, follow bool, input []aguiMessage) *agui {
	p := &agui{out: out, session: session, thread: thread, run: run, follow: follow, input: input}
	p.text = replyText{
		start: func(id string) {
			p.emit("TEXT_MESSAGE_START", "messageId", id, "role", "assistant")
			p.shown = append(p.shown, map[string]any{"id": id, "role": "assistant", "content": ""})
		},
		content: func(id, s string) {
			p.emit("TEXT_MESSAGE_CONTENT", "messageId", id, "delta", s)
			if m := p.message(id); m != nil {
				m["content"] = m["content"].(string) + s
			}
		},
		end:     func(id string) { p.emit("TEXT_MESSAGE_END", "messageId", id) },
		correct: p.correct,
	}
	return p
}

// emit writes one AG-UI event of type typ with the fields kv (name, value…).
func (p *agui) emit(typ string, kv ...any) {
	ev := map[string]any{"type": typ}
	for i := 0; i+1 < len(kv); i += 2 {
		ev[kv[i].(string)] = kv[i+1]
	}
	p.out.data(ev)
}

func (p *agui) message(id string) map[string]any {
	for i := len(p.shown) - 1; i >= 0; i-- {
		if p.shown[i]["id"] == id {
			return p.shown[i]
		}
	}
	return nil
}

// correct replaces what the client holds of message id with the recorded
// text: a snapshot of every message, the run's input first.
func (p *agui) correct(id, text string) {
	if m := p.message(id); m != nil {
		m["content"] = text
	} else if text != "" {
		p.shown = append(p.shown, map[string]any{"id": id, "role": "assistant", "content": text})
	}
	msgs := make([]any, 0, len(p.input)+len(p.shown))
	for _, m := range p.input {
		msgs = append(msgs, m)
	}
	for _, m := range p.shown {
		msgs = append(msgs, m)
	}
	p.emit("MESSAGES_SNAPSHOT", "messages", msgs)
}

func (p *agui) runStarted() {
	p.emit("RUN_STARTED", "threadId", p.thread, "runId", p.run)
}

func (p *agui) delta(d model.Delta) { p.text.delta(d) }

func (p *agui) fail(err error) {
	p.text.finish("", "")
	p.emit("RUN_ERROR", "message", err.Error(), "code", "log_unreadable")
}

func (p *agui) userMessage(seq int64, i int, text string) {
	if !p.follow || text == "" {
		return
	}
	id := fmt.Sprintf("%s-%d-user-%d", p.session, seq, i)
	p.emit("TEXT_MESSAGE_START", "messageId", id, "role", "user")
	p.emit("TEXT_MESSAGE_CONTENT", "messageId", id, "delta", text)
	p.emit("TEXT_MESSAGE_END", "messageId", id)
	p.shown = append(p.shown, map[string]any{"id": id, "role": "user", "content": text})
}

func (p *agui) event(ev loop.Event, live bool) {
	switch d := ev.Data.(type) {
	case *loop.SessionStarted:
		if len(d.Messages) == 0 {
			p.userMessage(ev.Seq, 0, d.Task)
		}
		for i, m := range d.Messages {
			if m.Role == model.RoleUser {
				p.userMessage(ev.Seq, i, m.Content)
			}
		}
	case *loop.MessageAdded:
		if d.Kind == loop.KindUser {
			p.userMessage(ev.Seq, 0, d.Content)
		}
	case *loop.IterationStarted:
		p.closeStep()
		p.step = "iteration " + strconv.Itoa(d.N)
		p.emit("STEP_STARTED", "stepName", p.step)
		p.text.begin(fmt.Sprintf("%s-%d-reply", p.session, ev.Seq), live)
	case *loop.IterationEnded:
		p.text.finish("", "")
		p.closeStep()
	case *loop.ModelResponded:
		id := p.text.finish(d.Text, fmt.Sprintf("%s-%d-reply", p.session, ev.Seq))
		if id == "" && len(d.ToolCalls) > 0 {
			id = fmt.Sprintf("%s-%d-reply", p.session, ev.Seq)
			p.shown = append(p.shown, map[string]any{"id": id, "role": "assistant"})
		}
		m := p.message(id)
		for _, c := range d.ToolCalls {
			args := string(c.Arguments)
			if args == "" {
				args = "{}"
			}
			p.emit("TOOL_CALL_START", "toolCallId", c.ID, "toolCallName", c.Name, "parentMessageId", id)
			p.emit("TOOL_CALL_ARGS", "toolCallId", c.ID, "delta", args)
			p.emit("TOOL_CALL_END", "toolCallId", c.ID)
			if m != nil {
				calls, _ := m["toolCalls"].([]any)
				m["toolCalls"] = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": args}})
			}
		}
	case *loop.ToolFinished:
		id := fmt.Sprintf("%s-%d-result", p.session, ev.Seq)
		p.emit("TOOL_CALL_RESULT", "messageId", id, "toolCallId", d.CallID, "content", d.Output, "role", "tool")
		p.shown = append(p.shown, map[string]any{"id": id, "role": "tool", "toolCallId": d.CallID, "content": d.Output})
	case *loop.PlanUpdated:
		steps := make([]any, len(d.Steps))
		for i, st := range d.Steps {
			step := map[string]any{"title": st.Title, "status": string(firstSet(string(st.Status), string(loop.StepPending)))}
			if st.Result != "" {
				step["result"] = st.Result
			}
			if !st.CompletedAt.IsZero() {
				step["completed_at"] = st.CompletedAt.Format(time.RFC3339Nano) // as the log has it
			}
			steps[i] = step
		}
		state := map[string]any{"plan": map[string]any{"goal": d.Goal, "status": string(d.Status), "steps": steps}}
		if p.plan == nil {
			p.emit("STATE_SNAPSHOT", "snapshot", state)
		} else if patch := jsonPatch(nil, "", p.plan, state); len(patch) > 0 {
			p.emit("STATE_DELTA", "delta", patch)
		}
		p.plan = state
	case *loop.ApprovalRequested:
		p.pending = append(p.pending, *d)
	case *loop.ApprovalDecided:
		for i, a := range p.pending {
			if a.CallID == d.CallID {
				p.pending = append(p.pending[:i:i], p.pending[i+1:]...)
				break
			}
		}
	case *loop.SessionEnded:
		p.stopped(d.Status, d.Reason, d.Answer, d.Detail, ev.Seq)
	case *loop.SessionPaused:
		p.stopped(loop.StatusPaused, d.Reason, "", d.Detail, ev.Seq)
	case *loop.SessionWaiting:
		p.stopped(loop.StatusWaiting, d.Reason, "", d.Question, ev.Seq)
	}
}

func (p *agui) closeStep() {
	if p.step != "" {
		p.emit("STEP_FINISHED", "stepName", p.step)
		p.step = ""
	}
}

// stopped ends the run as the session stopped (an event a projection may
// see more than once in a follow's replay: only the last one is passed).
func (p *agui) stopped(status loop.Status, reason loop.StopReason, answer, detail string, seq int64) {
	p.text.finish("", "")
	p.closeStep()
	result := map[string]any{"session_id": p.session, "status": string(status), "reason": string(reason), "seq": seq}
	switch status {
	case loop.StatusFailed, loop.StatusError:
		p.emit("RUN_ERROR", "message", firstSet(detail, "session "+p.session+" "+string(status)+": "+string(reason)), "code", string(reason))
		return
	case loop.StatusTerminated:
		p.emit("RUN_FINISHED", "threadId", p.thread, "runId", p.run, "result", result, "outcome", map[string]any{"type": "cancelled"})
		return
	case loop.StatusWaiting:
		result["question"] = detail
		if reason == loop.ReasonApproval && len(p.pending) > 0 {
			var interrupts []any
			for _, a := range p.pending {
				interrupts = append(interrupts, map[string]any{"id": a.CallID, "reason": "tool_approval", "toolCallId": a.CallID,
					"message": fmt.Sprintf("Allow %s %s?", a.Name, a.Input), "metadata": map[string]any{"args_hash": a.ArgsHash, "tool": a.Name}})
			}
			p.emit("RUN_FINISHED", "threadId", p.thread, "runId", p.run, "result", result, "outcome", map[string]any{"type": "interrupt", "interrupts": interrupts})
			return
		}
	case loop.StatusPaused:
		result["detail"] = detail
	default:
		if answer != "" {
			result["answer"] = answer
		}
	}
	p.emit("RUN_FINISHED", "threadId", p.thread, "runId", p.run, "result", result, "outcome", map[string]any{"type": "success"})
}

// jsonPatch appends to ops the JSON Patch (RFC 6902) that turns a into b,
// both values as encoding/json decodes them (maps, slices, scalars).
func jsonPatch(ops []any, path string, a, b any) []any {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		for _, k := range slices.Sorted(maps.Keys(av)) {
			x := av[k]
			if y, ok := bv[k]; ok {
				ops = jsonPatch(ops, path+"/"+pointerToken(k), x, y)
			} else {
				ops = append(ops, map[string]any{"op": "remove", "path": path + "/" + pointerToken(k)})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(bv)) {
			y := bv[k]
			if _, ok := av[k]; !ok {
				ops = append(ops, map[string]any{"op": "add", "path": path + "/" + pointerToken(k), "value": y})
			}
		}
		return ops
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		n := min(len(av), len(bv))
		for i := 0; i < n; i++ {
			ops = jsonPatch(ops, path+"/"+strconv.Itoa(i), av[i], bv[i])
		}
		for i := n; i < len(bv); i++ {
			ops = append(ops, map[string]any{"op": "add", "path": path + "/-", "value": bv[i]})
		}
		for i := len(av) - 1; i >= n; i-- {
			ops = append(ops, map[string]any{"op": "remove", "path": path + "/" + strconv.Itoa(i)})
		}
		return ops
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		ops = append(ops, map[string]any{"op": "replace", "path": path, "value": b})
	}
	return ops
}

// pointerToken escapes a key for a JSON Pointer (RFC 6901).
func pointerToken(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
