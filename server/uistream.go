package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
)

// The AI SDK's UI message stream (protocol v1, as the npm package ai reads
// it with useChat, DefaultChatTransport and readUIMessageStream) over a
// session's log:
//
//	POST /v1/ui-stream               useChat's api: {id, messages, …} in, the reply out
//	GET  /v1/ui-stream/{id}/stream   DefaultChatTransport's reconnect: the turn under way (204: none)
//	GET  /v1/sessions/{id}/ui-stream a session as one assistant message (?after=)
//
// A chat is a session: the caller's newest session labelled ui_chat=id,
// or the session whose ID is the chat's id. A POST for a new chat, or for
// a chat whose session has ended, starts one from its messages (with
// start options such as model beside them, as DefaultChatTransport's body
// sends them; an ended session's model and approval carry over); for a
// chat whose session has not ended, the last message is a reply (a
// user's), or carries the approvals a person gave (tool parts in state
// approval-responded). The answer is the log up to the session's next
// stop, as one assistant message:
//
//	log                       chunks
//	(stream opens)            start {messageId}
//	iteration.started/.ended  start-step / finish-step
//	deltas, model.responded   text-start, text-delta…, text-end (reset-step corrects lost deltas)
//	model.responded calls     tool-input-start, tool-input-delta, tool-input-available (dynamic tools)
//	tool.finished             tool-output-available, or tool-output-error when is_error
//	plan.updated              data-plan {id: "plan", data: {goal, status, steps}}
//	approval waiting          tool-approval-request {approvalId: the call's id}
//	session.ended failed      error {errorText}
//	(the session stops)       finish {finishReason, messageMetadata: {session_id, status, reason, answer}}, [DONE]

// uiChatLabel labels a session started for an AI SDK chat.
const uiChatLabel = "ui_chat"

// uiRequest is what DefaultChatTransport sends, and start options.
type uiRequest struct {
	ID        string      `json:"id"`
	Messages  []uiMessage `json:"messages"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`
	startOptions
}

type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

type uiPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	State      string          `json:"state"`
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	ErrorText  string          `json:"errorText"`
	Approval   *struct {
		ID       string `json:"id"`
		Approved *bool  `json:"approved"`
		Reason   string `json:"reason"`
	} `json:"approval"`
}

// toolName is the tool a tool part is of: dynamic-tool names it, a
// static one is typed tool-NAME.
func (p uiPart) toolName() (string, bool) {
	if p.Type == "dynamic-tool" {
		return p.ToolName, true
	}
	name, ok := strings.CutPrefix(p.Type, "tool-")
	return name, ok
}

// uiConversation converts a chat's messages for a new session.
func uiConversation(msgs []uiMessage) ([]api.Message, error) {
	var out []api.Message
	for i, m := range msgs {
		var text strings.Builder
		var calls []api.ToolCall
		var results []api.Message
		for j, p := range m.Parts {
			switch name, isTool := p.toolName(); {
			case p.Type == "text":
				text.WriteString(p.Text)
			case isTool && m.Role == "assistant":
				if p.State != "output-available" && p.State != "output-error" {
					continue // never answered: not part of the conversation
				}
				input := p.Input
				if len(input) == 0 {
					input = json.RawMessage("{}")
				}
				calls = append(calls, api.ToolCall{ID: p.ToolCallID, Name: name, Arguments: input})
				res := api.Message{Role: "tool", ToolCallID: p.ToolCallID, ToolName: name, Content: p.ErrorText, IsError: p.State == "output-error"}
				if !res.IsError {
					var s string
					if json.Unmarshal(p.Output, &s) == nil {
						res.Content = s
					} else {
						res.Content = string(p.Output)
					}
				}
				results = append(results, res)
			case p.Type == "file":
				return nil, invalid("messages[%d].parts[%d]: file parts are not supported: sessions take text", i, j)
			default:
				// step-start, reasoning, sources, data parts: shown to people,
				// not part of the conversation.
			}
		}
		switch m.Role {
		case "user", "system":
			out = append(out, api.Message{Role: m.Role, Content: text.String()})
		case "assistant":
			out = append(out, api.Message{Role: "assistant", Content: text.String(), ToolCalls: calls})
			out = append(out, results...)
		default:
			return nil, invalid("messages[%d]: role %q: use user, assistant or system", i, m.Role)
		}
	}
	return out, nil
}

// lastUserText is the text of the chat's last message, when it is a user's.
func lastUserText(msgs []uiMessage) (string, bool) {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "user" {
		return "", false
	}
	var b strings.Builder
	for _, p := range msgs[len(msgs)-1].Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}

// uiChat answers a chat's message with the session's reply.
func (s *Server) uiChat(w http.ResponseWriter, r *http.Request) {
	var in uiRequest
	if err := s.decodeLoose(w, r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case in.ID == "":
		problem(w, http.StatusBadRequest, `a chat request needs its chat "id" and "messages" (as DefaultChatTransport sends them)`)
		return
	case len(in.ID) > 200:
		problem(w, http.StatusBadRequest, "the chat id is longer than 200 characters")
		return
	case in.Trigger == "regenerate-message":
		problem(w, http.StatusConflict, "a session's replies are its log and are not regenerated: send a new message instead")
		return
	}
	st, found, err := s.sessionFor(r, uiChatLabel, in.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var id, messageID string
	var rg streamRange
	var deltas <-chan feed.Delta
	if found && st.Status.Finished() {
		found = false // the conversation goes on in a new session, as the last one was set up
		in.inherit(st)
	}
	if found {
		id = st.ID
		deltas = s.subscribeDeltas(ctx, id)
		rg = streamRange{after: st.Seq, liveAfter: st.Seq, stopAt: st.Seq + 1}
		approvals, ok := s.uiContinue(w, r, st, in.Messages)
		if !ok {
			return
		}
		if approvals {
			// The answer goes on with the assistant message that asked,
			// as useChat continues it.
			messageID = in.Messages[len(in.Messages)-1].ID
		}
	} else {
		msgs, err := uiConversation(in.Messages)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(msgs) == 0 {
			problem(w, http.StatusBadRequest, "the chat has no messages: send the user's message")
			return
		}
		req := in.request(msgs)
		req.Labels[uiChatLabel] = in.ID
		if id, found = s.startInternally(w, r, req); !found {
			return
		}
		deltas = s.subscribeDeltas(ctx, id)
		rg = streamRange{after: 0, liveAfter: 0, stopAt: 1}
	}
	s.uiStream(ctx, w, id, rg, deltas, firstSet(messageID, fmt.Sprintf("%s-%d", id, rg.after+1)))
}

// uiContinue carries a chat's session on: the approvals in the last
// message, an assistant's, are decided, else the last message is a reply.
// On refusal the answer has been written (ok false).
func (s *Server) uiContinue(w http.ResponseWriter, r *http.Request, st *loop.State, msgs []uiMessage) (approvals, ok bool) {
	if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" && st.Status == loop.StatusWaiting && st.Reason == loop.ReasonApproval {
		decided := 0
		for _, p := range msgs[n-1].Parts {
			if p.State != "approval-responded" || p.Approval == nil || p.Approval.Approved == nil {
				continue
			}
			for _, pa := range st.PendingApprovals {
				if pa.CallID == p.ToolCallID || pa.CallID == p.Approval.ID {
					d := api.Decision{Approve: p.Approval.Approved, ArgsHash: pa.ArgsHash, Reason: p.Approval.Reason}
					if !s.decideInternally(w, r, st.ID, pa.CallID, d) {
						return false, false
					}
					decided++
				}
			}
		}
		if decided > 0 {
			return true, true
		}
	}
	text, isUser := lastUserText(msgs)
	if !isUser {
		problem(w, http.StatusBadRequest, fmt.Sprintf("chat session %s is %s: send a user's message last (or, after an assistant's, the approvals it waits for)", st.ID, st.Status))
		return false, false
	}
	return false, s.replyInternally(w, r, st.ID, text)
}

// uiFollow streams a session as one assistant message, from its start
// (or after ?after=) to its next stop.
func (s *Server) uiFollow(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	after, err := seqParam(r)
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	s.uiFollowFrom(w, r, id, func(*loop.State) (int64, error) { return after, nil })
}

// uiReconnect streams the turn a chat's session is taking (204 when it
// is stopped: there is nothing to resume).
func (s *Server) uiReconnect(w http.ResponseWriter, r *http.Request) {
	conv := r.PathValue("id")
	st, found, err := s.sessionFor(r, uiChatLabel, conv)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !found {
		problem(w, http.StatusNotFound, fmt.Sprintf("no session for chat %q", conv))
		return
	}
	if st.Status != loop.StatusRunning {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.uiFollowFrom(w, r, st.ID, func(st *loop.State) (int64, error) { return s.turnStart(r.Context(), st.ID, st.Seq) })
}

// turnStart is the seq the session's current turn follows: its last stop
// before seq, or 0.
func (s *Server) turnStart(ctx context.Context, id string, seq int64) (int64, error) {
	start := int64(0)
	for after := int64(0); after < seq; {
		evs, err := s.svc.EventsPage(ctx, callerOf(ctx), id, after, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq <= seq && isStop(ev) {
				start = ev.Seq
			}
			after = ev.Seq
		}
	}
	return start, nil
}

func (s *Server) uiFollowFrom(w http.ResponseWriter, r *http.Request, id string, from func(*loop.State) (int64, error)) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	deltas := s.subscribeDeltas(ctx, id)
	st, err := s.svc.Get(ctx, callerOf(ctx), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	after, err := from(st)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rg := followRange(st, after)
	if after >= st.Seq && rg.stopAt == st.Seq {
		w.WriteHeader(http.StatusNoContent) // everything of a stopped session was read
		return
	}
	s.uiStream(ctx, w, id, rg, deltas, fmt.Sprintf("%s-%d", id, after+1))
}

// uiStream answers with the UI message stream of rg.
func (s *Server) uiStream(ctx context.Context, w http.ResponseWriter, id string, rg streamRange, deltas <-chan feed.Delta, messageID string) {
	flusher, ok := openStream(w, "x-vercel-ai-ui-message-stream", "v1")
	if !ok {
		return
	}
	out := &sseOut{w: w}
	p := newUIStream(out, id)
	out.data(map[string]any{"type": "start", "messageId": messageID})
	s.project(ctx, w, flusher, out, id, rg, deltas, p)
	if p.done {
		out.raw("[DONE]")
		flusher.Flush()
	}
}

// uiStreamer projects a session's log as UI message chunks.
type uiStreamer struct {
	out     *sseOut
	session string
	text    replyText
	step    bool
	parts   int // text parts opened, to name new ones
	pending []loop.ApprovalRequested
	done    bool
}

func newUIStream(out *sseOut, session string) *uiStreamer {
	p := &uiStreamer{out: out, session: session}
	p.text = replyText{
		start:   func(id string) { p.chunk("text-start", "id", id) },
		content: func(id, s string) { p.chunk("text-delta", "id", id, "delta", s) },
		end:     func(id string) { p.chunk("text-end", "id", id) },
		correct: func(id, text string) {
			// The step so far is this reply's text: drop it and send the
			// recorded text as a new part.
			p.chunk("reset-step")
			if text != "" {
				p.parts++
				nid := fmt.Sprintf("%s-fixed-%d", id, p.parts)
				p.chunk("text-start", "id", nid)
				p.chunk("text-delta", "id", nid, "delta", text)
				p.chunk("text-end", "id", nid)
			}
		},
	}
	return p
}

func (p *uiStreamer) chunk(typ string, kv ...any) {
	c := map[string]any{"type": typ}
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	p.out.data(c)
}

func (p *uiStreamer) delta(d model.Delta) { p.text.delta(d) }

func (p *uiStreamer) fail(err error) {
	p.text.finish("", "")
	p.chunk("error", "errorText", err.Error())
	p.finish("error", map[string]any{"session_id": p.session})
}

func (p *uiStreamer) openStep() {
	if !p.step {
		p.chunk("start-step")
		p.step = true
	}
}

func (p *uiStreamer) closeStep() {
	if p.step {
		p.chunk("finish-step")
		p.step = false
	}
}

func (p *uiStreamer) event(ev loop.Event, live bool) {
	switch d := ev.Data.(type) {
	case *loop.IterationStarted:
		p.closeStep()
		p.openStep()
		p.text.begin(fmt.Sprintf("%s-%d-text", p.session, ev.Seq), live)
	case *loop.IterationEnded:
		p.text.finish("", "")
		p.closeStep()
	case *loop.ModelResponded:
		p.openStep() // a wrap-up reply has no iteration of its own
		p.text.finish(d.Text, fmt.Sprintf("%s-%d-text", p.session, ev.Seq))
		for _, c := range d.ToolCalls {
			args := c.Arguments
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			var input any
			if err := json.Unmarshal(args, &input); err != nil {
				input = string(args) // a malformed call, as the model sent it
			}
			p.chunk("tool-input-start", "toolCallId", c.ID, "toolName", c.Name, "dynamic", true)
			p.chunk("tool-input-delta", "toolCallId", c.ID, "inputTextDelta", string(args))
			p.chunk("tool-input-available", "toolCallId", c.ID, "toolName", c.Name, "input", input, "dynamic", true)
		}
	case *loop.ToolFinished:
		if d.IsError || d.Refused || d.Failed || d.Unknown {
			p.chunk("tool-output-error", "toolCallId", d.CallID, "errorText", d.Output, "dynamic", true)
		} else {
			p.chunk("tool-output-available", "toolCallId", d.CallID, "output", d.Output, "dynamic", true)
		}
	case *loop.PlanUpdated:
		p.chunk("data-plan", "id", "plan", "data", map[string]any{"goal": d.Goal, "status": d.Status, "steps": d.Steps})
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
		p.stopped(d.Status, d.Reason, d.Answer, d.Detail)
	case *loop.SessionPaused:
		p.stopped(loop.StatusPaused, d.Reason, "", d.Detail)
	case *loop.SessionWaiting:
		p.stopped(loop.StatusWaiting, d.Reason, "", d.Question)
	}
}

func (p *uiStreamer) stopped(status loop.Status, reason loop.StopReason, answer, detail string) {
	p.text.finish("", "")
	meta := map[string]any{"session_id": p.session, "status": string(status), "reason": string(reason)}
	if answer != "" {
		meta["answer"] = answer
	}
	if detail != "" {
		meta["detail"] = detail
	}
	why := "stop"
	switch status {
	case loop.StatusFailed, loop.StatusError:
		p.closeStep()
		p.chunk("error", "errorText", firstSet(detail, fmt.Sprintf("session %s %s: %s", p.session, status, reason)))
		why = "error"
	case loop.StatusTerminated, loop.StatusPaused:
		why = "interrupted"
	case loop.StatusWaiting:
		if reason == loop.ReasonApproval {
			for _, a := range p.pending {
				p.chunk("tool-approval-request", "approvalId", a.CallID, "toolCallId", a.CallID)
			}
			why = "tool-calls"
		}
	}
	p.closeStep()
	p.finish(why, meta)
}

func (p *uiStreamer) finish(why string, meta map[string]any) {
	p.chunk("finish", "finishReason", why, "messageMetadata", meta)
	p.done = true
}
