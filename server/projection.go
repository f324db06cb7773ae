package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/store"
)

// A projection shows a session's log in another protocol's terms (AG-UI,
// the AI SDK's UI message stream). It is a reader of the feed and a
// caller of the service like every other front end: it never changes how
// a session runs, and what a client assembles from it is what the log
// says.
//
// What a projection may rely on (see project):
//   - events arrive in log order, each once;
//   - token deltas of a model reply arrive before the reply's
//     model.responded is handed over (queued deltas are taken first), and
//     only deltas of replies begun after the stream opened are "live";
//   - the stream stops after the first stop event (session.ended,
//     .paused, .waiting) at or after stopAt.
type projection interface {
	// delta is a token delta of the session's model.
	delta(d model.Delta)
	// event is the next event of the log; live says it was committed
	// after the stream opened (its reply's deltas may have been shown).
	event(ev loop.Event, live bool)
	// fail ends the stream after the log could not be read.
	fail(err error)
}

// sseOut writes Server-Sent Events frames of JSON data. The first write
// error is kept and every later write is skipped.
type sseOut struct {
	w   io.Writer
	err error
}

// data writes one frame: data: JSON.
func (o *sseOut) data(v any) {
	if o.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		o.err = err
		return
	}
	_, o.err = fmt.Fprintf(o.w, "data: %s\n\n", b)
}

// raw writes one frame of data as it is.
func (o *sseOut) raw(s string) {
	if o.err == nil {
		_, o.err = fmt.Fprintf(o.w, "data: %s\n\n", s)
	}
}

// streamRange is which part of a log a projection shows.
type streamRange struct {
	// after: events with a greater seq are read (replayed, then live).
	after int64
	// liveAfter: events with a greater seq were committed after the
	// stream opened; only their replies' deltas are shown.
	liveAfter int64
	// stopAt: the stream ends with the first stop event whose seq is at
	// least this (earlier stops are history: the session went on).
	stopAt int64
}

// followRange is the range of a stream that follows a session as it is
// now: everything after after, ending where the session stops next (or
// where it stopped, if it is stopped now).
func followRange(st *loop.State, after int64) streamRange {
	stopAt := st.Seq + 1
	if st.Status.Finished() || st.Status == loop.StatusPaused || st.Status == loop.StatusWaiting {
		stopAt = st.Seq
	}
	return streamRange{after: after, liveAfter: st.Seq, stopAt: stopAt}
}

// isStop reports whether an event stops the session (for now or for good).
func isStop(ev loop.Event) bool {
	switch ev.Type {
	case loop.TypeSessionEnded, loop.TypeSessionPaused, loop.TypeSessionWaiting:
		return true
	}
	return false
}

// openStream answers with the headers of an event stream.
func openStream(w http.ResponseWriter, extra ...string) (http.Flusher, bool) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		problem(w, http.StatusInternalServerError, "this connection cannot stream")
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	return flusher, true
}

// project runs p over a session's events in rg and its token deltas,
// writing to w (whose headers openStream has sent), until the session
// stops, the log fails, the client goes or a write fails. deltas must
// have been subscribed before the range was read, so no live delta is
// missed for want of a reader.
func (s *Server) project(ctx context.Context, w http.ResponseWriter, flusher http.Flusher, out *sseOut, id string, rg streamRange, deltas <-chan feed.Delta, p projection) {
	defer s.streamOpened()()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := s.svc.Events(ctx, callerOf(ctx), id, rg.after)
	if err != nil {
		p.fail(err)
		flusher.Flush()
		return
	}
	logc := make(chan logItem, 64)
	go func() {
		defer close(logc)
		for ev, err := range events {
			select {
			case logc <- logItem{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	rc := http.NewResponseController(w)
	// drain hands over the deltas already queued: a reply's deltas are
	// published before its model.responded is committed, so they are all
	// queued by the time that event is read.
	drain := func() {
		for {
			select {
			case d, ok := <-deltas:
				if !ok {
					deltas = nil
					return
				}
				p.delta(d.Delta)
			default:
				return
			}
		}
	}
	for out.err == nil {
		// A client that stops reading is dropped after this long; the
		// session never waits for it.
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
		case d, ok := <-deltas:
			if !ok {
				deltas = nil
				continue
			}
			p.delta(d.Delta)
		case it, ok := <-logc:
			if !ok {
				return // ctx ended
			}
			if it.err != nil {
				p.fail(it.err)
				flusher.Flush()
				return
			}
			drain()
			if !isStop(it.ev) {
				p.event(it.ev, it.ev.Seq > rg.liveAfter)
			} else if it.ev.Seq >= rg.stopAt {
				p.event(it.ev, true)
				flusher.Flush()
				return
			} // else an earlier stop the session went on from

		}
		flusher.Flush()
	}
}

// replyText follows the text of one model reply at a time, so a client
// sees it as it is written and ends up with exactly the text the log
// records. Deltas are best effort and carry no iteration: a reader joins
// mid-reply, misses some when it falls behind, and gets later replies'
// deltas before this reply's model.responded (commits trail the model
// calls after them). So deltas are split into replies where a reply's
// shape says one ended (text after tool calls, a first tool call after
// tool calls), queued until their iteration begins, and checked against
// the recorded text when model.responded comes: the rest is sent, or,
// when what was shown is not a beginning of it, correct replaces it with
// the recorded text.
type replyText struct {
	start   func(id string)
	content func(id, s string)
	end     func(id string)
	// correct replaces message id, already ended, with the recorded text.
	correct func(id, text string)

	id    string // the open reply's message, "" when none
	sent  strings.Builder
	live  bool
	tools bool // the open reply's tool calls have begun
	// queued holds the deltas of replies not begun yet, oldest first.
	queued []*queuedReply
	held   int // bytes queued
}

type queuedReply struct {
	text  strings.Builder
	tools bool
}

// maxQueuedText bounds the deltas held for replies not yet begun.
const maxQueuedText = 1 << 20

func (t *replyText) delta(d model.Delta) {
	isTool := d.ToolName != "" || d.ArgumentsFragment != ""
	if !isTool && d.Text == "" {
		return
	}
	// The reply the delta continues: the last queued one, else the open
	// one while it is shown.
	var tailTools bool
	var q *queuedReply
	switch {
	case len(t.queued) > 0:
		q = t.queued[len(t.queued)-1]
		tailTools = q.tools
	case t.id != "" && t.live:
		tailTools = t.tools
	}
	newReply := tailTools && (!isTool || (d.ToolName != "" && d.ToolCallIndex == 0))
	if newReply || (q == nil && (t.id == "" || !t.live)) {
		if t.held+len(d.Text) > maxQueuedText {
			return
		}
		q = &queuedReply{}
		t.queued = append(t.queued, q)
	}
	if q == nil { // the open reply
		if isTool {
			t.tools = true
		} else {
			t.write(d.Text)
		}
		return
	}
	if isTool {
		q.tools = true
	} else if t.held+len(d.Text) <= maxQueuedText {
		q.text.WriteString(d.Text)
		t.held += len(d.Text)
	}
}

func (t *replyText) write(s string) {
	if t.sent.Len() == 0 {
		t.start(t.id)
	}
	t.sent.WriteString(s)
	t.content(t.id, s)
}

// begin opens the reply of an iteration under message id; live says its
// deltas may be shown (replies begun before the stream opened are sent
// whole).
func (t *replyText) begin(id string, live bool) {
	if t.id != "" {
		t.finish("", "") // an iteration without a reply (the model failed)
	}
	t.id, t.live, t.tools = id, live, false
	if !live || len(t.queued) == 0 {
		return
	}
	q := t.queued[0]
	t.queued = t.queued[1:]
	t.held -= q.text.Len()
	t.tools = q.tools
	if q.text.Len() > 0 {
		t.write(q.text.String())
	}
}

// finish closes the open reply with its complete text as recorded and
// returns the message's id ("" when it had no text); with no reply open
// the message is fallbackID.
func (t *replyText) finish(text, fallbackID string) string {
	id := t.id
	if id == "" {
		id = fallbackID
	}
	sent := t.sent.String()
	t.id, t.live, t.tools = "", false, false
	t.sent.Reset()
	switch {
	case sent == "" && text == "":
		return ""
	case strings.HasPrefix(text, sent):
		if sent == "" {
			t.start(id)
		}
		if rest := text[len(sent):]; rest != "" {
			t.content(id, rest)
		}
		t.end(id)
	default:
		t.end(id)
		t.correct(id, text)
		if rest, ok := strings.CutPrefix(sent, text); ok && t.held+len(rest) <= maxQueuedText {
			// What went beyond is the next reply's beginning.
			q := &queuedReply{}
			q.text.WriteString(rest)
			t.held += len(rest)
			t.queued = append([]*queuedReply{q}, t.queued...)
		}
	}
	return id
}

// startInternally runs a start exactly as POST /v1/sessions does (the
// same defaults, checks, quotas and workspace), returning the new
// session's ID; on refusal the answer has been written to w.
func (s *Server) startInternally(w http.ResponseWriter, r *http.Request, req api.StartRequest) (string, bool) {
	var created api.Created
	if !s.internally(w, r, s.createSession, req, "", &created) {
		return "", false
	}
	return created.ID, true
}

// replyInternally sends a person's message as POST
// /v1/sessions/{id}/reply does; on refusal the answer has been written.
func (s *Server) replyInternally(w http.ResponseWriter, r *http.Request, id, text string) bool {
	return s.internally(w, r, s.reply, api.Control{Text: text}, id, nil)
}

// decideInternally decides a pending approval as POST
// /v1/sessions/{id}/approvals/{call} does.
func (s *Server) decideInternally(w http.ResponseWriter, r *http.Request, id, call string, d api.Decision) bool {
	r2 := r.Clone(r.Context())
	r2.SetPathValue("call", call)
	return s.internally(w, r2, s.decide, d, id, nil)
}

// internally calls one of the API's own handlers with body, so a
// protocol endpoint does exactly what the API does. A refusal (any
// status from 300) is copied to w and reported as false.
func (s *Server) internally(w http.ResponseWriter, r *http.Request, h http.HandlerFunc, body any, id string, answer any) bool {
	b, err := json.Marshal(body)
	if err != nil {
		s.fail(w, r, err)
		return false
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(b))
	r2.ContentLength = int64(len(b))
	r2.Header.Set("Content-Type", "application/json")
	r2.Header.Del("Idempotency-Key")
	if id != "" {
		r2.SetPathValue("id", id)
	}
	rec := httptest.NewRecorder()
	h(rec, r2)
	if rec.Code >= 300 {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return false
	}
	if answer != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), answer); err != nil {
			s.fail(w, r, err)
			return false
		}
	}
	return true
}

// sessionFor finds the session a protocol's conversation ID names: the
// caller's newest session labelled label=conv, else the session with that
// ID. found is false when there is none (nothing is written then). A
// conversation that goes on after its session ended gets a new session
// with the label, so the newest is the one it is in.
func (s *Server) sessionFor(r *http.Request, label, conv string) (st *loop.State, found bool, err error) {
	c := callerOf(r.Context())
	list, err := s.svc.List(r.Context(), c, store.Filter{Labels: map[string]string{label: conv}, Limit: 1})
	if err != nil {
		return nil, false, err
	}
	if len(list) > 0 {
		st, err = s.svc.Get(r.Context(), c, list[0].ID)
		if err != nil {
			return nil, false, err
		}
		return st, true, nil
	}
	if validID.MatchString(conv) {
		if st, err := s.svc.Get(r.Context(), c, conv); err == nil {
			return st, true, nil
		}
	}
	return nil, false, nil
}
