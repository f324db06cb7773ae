package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentloop/agentloop/service"
)

var errTooLarge = errors.New("the request body is too large")

// decode reads a JSON body into v: unknown fields, wrong types, trailing
// data and oversized bodies are invalid requests naming what is wrong.
// An empty body leaves v as it is when empty is allowed.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) error {
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
	case errors.As(err, &tooBig):
		return fmt.Errorf("%w (limit %d bytes)", errTooLarge, tooBig.Limit)
	case errors.Is(err, io.EOF):
		if emptyOK {
			return nil
		}
		return &service.Error{Kind: service.ErrInvalid, Msg: "the request body is empty: send a JSON object"}
	case errors.As(err, &syntax):
		return &service.Error{Kind: service.ErrInvalid, Msg: fmt.Sprintf("the body is not valid JSON (at byte %d): %v", syntax.Offset, err)}
	case errors.As(err, &typ):
		return &service.Error{Kind: service.ErrInvalid, Msg: fmt.Sprintf("field %q must be %s, not %s", typ.Field, typ.Type, typ.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return &service.Error{Kind: service.ErrInvalid, Msg: "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")}
	default:
		return &service.Error{Kind: service.ErrInvalid, Msg: "the body is not valid JSON: " + err.Error()}
	}
	if dec.More() {
		return &service.Error{Kind: service.ErrInvalid, Msg: "the body has data after its JSON object"}
	}
	return nil
}
