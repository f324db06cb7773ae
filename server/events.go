package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
)

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	after, err := seqParam(r)
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	if wantsWebSocket(r) {
		s.socket(w, r, id, after)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		s.stream(w, r, id, after)
		return
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			problem(w, http.StatusBadRequest, "limit must be a number from 1 to 1000")
			return
		}
	}
	evs, err := s.svc.EventsPage(r.Context(), callerOf(r.Context()), id, after, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page := api.EventsPage{Events: make([]api.Event, 0, len(evs)), Next: after}
	for _, ev := range evs {
		data, err := ev.EncodeData()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		page.Events = append(page.Events, api.Event{SessionID: ev.SessionID, Seq: ev.Seq, Type: string(ev.Type), Version: ev.Version, Time: ev.Time, Data: data})
		page.Next = ev.Seq
	}
	writeJSON(w, http.StatusOK, page)
}

// streamWriteTimeout bounds one write to an event stream.
const streamWriteTimeout = 30 * time.Second

// seqParam is where a reader resumes: Last-Event-ID (an SSE reconnect)
// or ?after=.
func seqParam(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("after / Last-Event-ID %q must be a sequence number (0 or more)", v)
	}
	return n, nil
}

// stream sends a session's events as Server-Sent Events: the stored ones
// after seq after, then new ones as they are committed. Every event has
// id: its sequence number (a reconnect with Last-Event-ID resumes without
// loss or repeat) and event: its type; token deltas go as event: delta
// without an id (they are not in the log). The stream ends after the
// session's end (see streamEnd); a comment line every Heartbeat keeps it
// open.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id string, after int64) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		problem(w, http.StatusInternalServerError, "this connection cannot stream")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	end, err := s.streamEnd(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if end.over(after) {
		// The client has everything of a session that ended: 204 tells
		// EventSource to stop reconnecting.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	events, err := s.svc.Events(ctx, callerOf(ctx), id, after)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer s.streamOpened()()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	logc, deltas := s.follow(ctx, id, events)
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	var tl timeline
	rc := http.NewResponseController(w)
	for {
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
			flusher.Flush()
		case d, ok := <-deltas:
			if !ok {
				deltas = nil
				continue
			}
			b, _ := json.Marshal(d.Delta)
			if _, err := fmt.Fprintf(w, "event: delta\ndata: %s\n\n", b); err != nil {
				return
			}
			flusher.Flush()
		case it, ok := <-logc:
			// Everything already waiting goes out with one flush: a
			// commit delivers several events at once, and each flush is a
			// write to the connection.
			for {
				if !ok {
					flusher.Flush()
					return
				}
				if failed := s.writeEvent(w, it, &tl); failed || end.at(it.ev) {
					flusher.Flush()
					return
				}
				select {
				case it, ok = <-logc:
					continue
				default:
				}
				break
			}
			flusher.Flush()
		}
	}
}

// streamEnd is where a stream of a session's events ends: after the last
// event of a session that has ended, or after a session.ended still to
// come. A session.ended already in the log before a session that goes on
// (a rewind took it back, or a fork copied its original's log) is history
// and ends nothing.
type streamEnd struct {
	// ended is the last event's sequence number when the session has
	// ended, else 0.
	ended int64
	// seen is the log's last sequence number when the stream began.
	seen int64
}

func (s *Server) streamEnd(ctx context.Context, id string) (streamEnd, error) {
	st, err := s.svc.Get(ctx, callerOf(ctx), id)
	if err != nil {
		return streamEnd{}, err
	}
	e := streamEnd{seen: st.Seq}
	if st.Status.Finished() {
		e.ended = st.Seq
	}
	return e, nil
}

// over reports whether a client that has every event up to after has
// everything of an ended session.
func (e streamEnd) over(after int64) bool { return e.ended > 0 && after >= e.ended }

// at reports whether the stream ends with ev.
func (e streamEnd) at(ev loop.Event) bool {
	if e.ended > 0 {
		return ev.Seq >= e.ended
	}
	return ev.Type == loop.TypeSessionEnded && ev.Seq > e.seen
}

// writeEvent writes one item of a session's log to an event stream and
// reports whether the stream must end with it: the log failed, or a write
// did.
func (s *Server) writeEvent(w http.ResponseWriter, it logItem, tl *timeline) (failed bool) {
	if it.err != nil {
		fmt.Fprintf(w, "event: error\ndata: %q\n\n", it.err.Error())
		return true
	}
	b, err := s.enc.encode(it.ev)
	if err != nil {
		return true
	}
	if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", it.ev.Seq, it.ev.Type, b); err != nil {
		return true
	}
	if line, ok := tl.next(it.ev); ok {
		lb, _ := json.Marshal(line)
		if _, err := fmt.Fprintf(w, "event: tool_call\ndata: %s\n\n", lb); err != nil {
			return true
		}
	}
	return false
}

// summaries streams the caller's sessions as summaries (Server-Sent
// Events, event: summary): the newest 100 first, then each one again as
// it changes. An empty summary (event: lagged) says updates were missed:
// list again.
func (s *Server) summaries(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		problem(w, http.StatusInternalServerError, "this connection cannot stream")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ch, err := s.svc.WatchSummaries(ctx, callerOf(ctx), 100)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
		case sum, ok := <-ch:
			if !ok {
				return
			}
			if sum.ID == "" {
				fmt.Fprint(w, "event: lagged\ndata: {}\n\n")
			} else {
				b, _ := json.Marshal(sum)
				if _, err := fmt.Fprintf(w, "event: summary\ndata: %s\n\n", b); err != nil {
					return
				}
			}
		}
		flusher.Flush()
	}
}

// logItem is an event of a followed log, or the error that ended it.
type logItem struct {
	ev  loop.Event
	err error
}

// follow reads a session's log on its own goroutine, so a stream's
// heartbeats and token deltas go out while it waits, and subscribes to
// the session's deltas. Both channels end with ctx.
func (s *Server) follow(ctx context.Context, id string, events iter.Seq2[loop.Event, error]) (<-chan logItem, <-chan feed.Delta) {
	// Buffered so that the events of one commit are all waiting by the
	// time the stream writes the first (see stream).
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
	var deltas <-chan feed.Delta
	if s.cfg.Deltas != nil {
		deltas = s.cfg.Deltas.Subscribe(ctx, id, 256)
	}
	return logc, deltas
}
