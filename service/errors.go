package service

import (
	"errors"
	"fmt"
)

// The kinds of error the service returns, for errors.Is. A transport maps
// them to its own codes (HTTP: 404, 409, 400, 403); the error's text says
// what happened and what to do.
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("conflict")
	ErrInvalid   = errors.New("invalid request")
	ErrForbidden = errors.New("forbidden")
)

// Error is a service error of one kind with a message for people.
type Error struct {
	Kind error // one of ErrNotFound, ErrConflict, ErrInvalid, ErrForbidden
	Msg  string
	Err  error // the underlying error, if any
}

func (e *Error) Error() string { return e.Msg }

// Is reports whether the error is of kind target.
func (e *Error) Is(target error) bool { return target == e.Kind }

func (e *Error) Unwrap() error { return e.Err }

func notFound(format string, a ...any) error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf(format, a...)}
}

func conflict(format string, a ...any) error {
	return &Error{Kind: ErrConflict, Msg: fmt.Sprintf(format, a...)}
}

func invalid(format string, a ...any) error {
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(format, a...)}
}

func forbidden(format string, a ...any) error {
	return &Error{Kind: ErrForbidden, Msg: fmt.Sprintf(format, a...)}
}

// KindOf returns the kind of err: one of the four, or nil for an internal
// error (a transport's 500).
func KindOf(err error) error {
	for _, k := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrForbidden} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}
