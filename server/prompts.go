package server

import (
	"net/http"
	"strconv"
	"strings"
)

// promptBody is PUT /v1/prompts/{name}.
type promptBody struct {
	Text string `json:"text"`
}

func (s *Server) listPrompts(w http.ResponseWriter, r *http.Request) {
	list, err := s.svc.Prompts(r.Context(), callerOf(r.Context()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if list == nil {
		writeJSON(w, http.StatusOK, map[string]any{"prompts": []any{}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompts": list})
}

func (s *Server) getPrompt(w http.ResponseWriter, r *http.Request) {
	version := 0
	if v := r.URL.Query().Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			problem(w, http.StatusBadRequest, "version must be a number from 1")
			return
		}
		version = n
	}
	p, err := s.svc.Prompt(r.Context(), callerOf(r.Context()), r.PathValue("name"), version)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) putPrompt(w http.ResponseWriter, r *http.Request) {
	var b promptBody
	if err := s.decode(w, r, &b, false); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.svc.PutPrompt(r.Context(), callerOf(r.Context()), r.PathValue("name"), b.Text)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

// promptRef splits "name" or "name@version".
func promptRef(ref string) (string, int, bool) {
	name, v, found := strings.Cut(ref, "@")
	if !found {
		return name, 0, true
	}
	n, err := strconv.Atoi(v)
	return name, n, err == nil && n > 0
}
