package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/agentloop/agentloop/model"
)

// wantsWebSocket reports an upgrade request.
func wantsWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// wsDelta is a token delta on a WebSocket (not in the log, no seq).
type wsDelta struct {
	Type      string      `json:"type"` // "delta"
	SessionID string      `json:"session_id"`
	Delta     model.Delta `json:"delta"`
}

// socket sends a session's events over a WebSocket: one JSON text message
// per event (the log's event, with its seq), then new ones as they are
// committed, token deltas as {"type":"delta"} messages; it closes
// normally after the session's end (see streamEnd). ?after= resumes after a sequence number.
// A client that does not read its messages is dropped after a write
// timeout; the session never waits for it.
func (s *Server) socket(w http.ResponseWriter, r *http.Request, id string, after int64) {
	c := callerOf(r.Context())
	// Check access before the upgrade, so refusals are plain HTTP errors.
	if _, err := s.svc.EventsPage(r.Context(), c, id, after, 1); err != nil {
		s.fail(w, r, err)
		return
	}
	end, err := s.streamEnd(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.front.wsHosts})
	if err != nil {
		return // Accept wrote the error
	}
	if end.over(after) { // the client has everything of an ended session
		conn.Close(websocket.StatusNormalClosure, "session ended")
		return
	}
	defer conn.CloseNow()
	defer s.streamOpened()()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// Reading is required for control frames; a client's messages are
	// not part of the protocol and end the connection.
	ctx = conn.CloseRead(ctx)
	events, err := s.svc.Events(ctx, c, id, after)
	if err != nil {
		conn.Close(websocket.StatusPolicyViolation, err.Error())
		return
	}
	logc, deltas := s.follow(ctx, id, events)
	var tl timeline
	send := func(v any) bool {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return wsjson.Write(wctx, conn, v) == nil
	}
	for {
		select {
		case <-ctx.Done():
			return
		case d, ok := <-deltas:
			if !ok {
				deltas = nil
				continue
			}
			if !send(wsDelta{Type: "delta", SessionID: id, Delta: d.Delta}) {
				return
			}
		case it, ok := <-logc:
			if !ok {
				return
			}
			if it.err != nil {
				conn.Close(websocket.StatusInternalError, "reading the log failed")
				return
			}
			if !send(it.ev) {
				return
			}
			if line, ok := tl.next(it.ev); ok && !send(line) {
				return
			}
			if end.at(it.ev) {
				conn.Close(websocket.StatusNormalClosure, "session ended")
				return
			}
		}
	}
}
