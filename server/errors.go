package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
)

// problemBody is an RFC 9457 problem document.
type problemBody struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// problem writes an application/problem+json error.
func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(problemBody{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail})
}

// fail maps a service error to its status; anything untyped is a 500 whose
// cause is logged, not shown.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var status int
	switch service.KindOf(err) {
	case service.ErrNotFound:
		status = http.StatusNotFound
	case service.ErrConflict:
		status = http.StatusConflict
	case service.ErrInvalid:
		status = http.StatusBadRequest
	case service.ErrForbidden:
		status = http.StatusForbidden
	default:
		if errors.Is(err, errTooLarge) {
			problem(w, http.StatusRequestEntityTooLarge, err.Error())
			return
		}
		if errors.Is(err, loop.ErrNotSaved) {
			s.log.Error("the sessions database refuses writes", "method", r.Method, "path", r.URL.Path, "err", err)
			w.Header().Set("Retry-After", "30")
			problem(w, http.StatusServiceUnavailable, "the server cannot save sessions now: its database refuses writes (the server's log says why); try again later")
			return
		}
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		problem(w, http.StatusInternalServerError, "the server could not do this; see its log")
		return
	}
	problem(w, status, err.Error())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
