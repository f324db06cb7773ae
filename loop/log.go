package loop

import (
	"context"
	"errors"
	"time"
)

// Log is what the runner needs from persistence: append a session's events
// durably, and load them back. store.Store implementations satisfy it.
type Log interface {
	// Append writes events durably, in order, all or nothing. Each event's
	// Seq must follow the last stored Seq of its session; otherwise Append
	// fails with ErrSeqConflict and writes nothing.
	Append(ctx context.Context, events ...Event) error
	// Load returns every event of a session in order, or ErrNotFound.
	Load(ctx context.Context, sessionID string) ([]Event, error)
}

// AsyncLog is a Log that can append without blocking the caller: it calls
// done exactly once, from any goroutine, when the events are durable (nil)
// or failed. done must return quickly. Appends are first in, first out:
// the appends of a session commit in the order AppendAsync was called
// (a session may have several in flight). A store may hold an AppendAsync
// briefly so that later appends share its commit; a plain Append is
// committed without delay, and with it everything appended before it. The
// runner uses AppendAsync to overlap commits with its next steps; it never
// runs a non-idempotent tool before every earlier append has succeeded.
// The log keeps no reference to the events slice once it calls done (a
// watcher gets a copy): the runner fills it again with later events.
type AsyncLog interface {
	Log
	AppendAsync(ctx context.Context, events []Event, done func(error))
}

// ErrNotFound is returned (wrapped) when a session does not exist.
var ErrNotFound = errors.New("session not found")

// ErrNotSaved marks (errors.Is) a session that stopped because its events
// could not be saved: the store refused or failed the append (disk full,
// database gone). It is not the caller's mistake; the session resumes from
// what was saved once the store works again.
var ErrNotSaved = errors.New("events could not be saved")

// notSaved wraps a store's error as ErrNotSaved, keeping its text.
type notSaved struct{ err error }

func (e notSaved) Error() string   { return e.err.Error() }
func (e notSaved) Unwrap() []error { return []error{ErrNotSaved, e.err} }

// ErrSeqConflict is returned (wrapped) when an append does not continue the
// stored log: another writer got there first, or events were replayed.
var ErrSeqConflict = errors.New("event sequence conflict")

// Summary is the one-line view of a session that stores keep for listing.
type Summary struct {
	ID        string     `json:"id"`
	Tenant    string     `json:"tenant,omitempty"`
	Task      string     `json:"task"`
	Model     string     `json:"model,omitempty"`
	Status    Status     `json:"status"`
	Reason    StopReason `json:"reason,omitempty"`
	Iteration int        `json:"iteration"`
	// MaxIterations is the session's step limit (0 when none was recorded).
	MaxIterations int       `json:"max_iterations,omitempty"`
	Tokens        int       `json:"tokens"`
	CostUSD       float64   `json:"cost_usd,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	LastSeq       int64     `json:"last_seq"`
	// Workspace and Labels are what session.started recorded.
	Workspace string            `json:"workspace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// ForkedFrom, as session.started recorded it: the session and step
	// this one was forked from (lists find a session's forks by it).
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty"`
}

// Apply updates the summary with one event. Stores call it as they append
// so listing never needs to fold whole logs.
func (s *Summary) Apply(e Event) {
	s.ID = e.SessionID
	s.LastSeq = e.Seq
	s.UpdatedAt = e.Time
	switch d := e.Data.(type) {
	case *SessionStarted:
		s.Task, s.Model, s.Status, s.CreatedAt, s.Tenant = d.Task, d.Model, StatusRunning, e.Time, d.Tenant
		s.Workspace, s.Labels, s.MaxIterations = d.Workspace, d.Labels, d.Limits.MaxIterations
		s.ForkedFrom = d.ForkedFrom
	case *IterationStarted:
		s.Iteration = d.N
	case *ModelResponded:
		s.Tokens += d.Usage.Total()
		s.CostUSD += d.CostUSD
	case *SessionPaused:
		s.Status, s.Reason = StatusPaused, d.Reason
	case *SessionWaiting:
		s.Status, s.Reason = StatusWaiting, d.Reason
	case *SessionResumed:
		s.Status, s.Reason = StatusRunning, ""
	case *SessionEnded:
		s.Status, s.Reason = d.Status, d.Reason
	case *SessionRewound:
		// Tokens and cost stay: the set-aside steps' calls were spent.
		s.Iteration, s.Status, s.Reason = d.ToIteration, StatusPaused, ReasonRewound
	}
}
