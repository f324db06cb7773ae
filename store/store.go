// Package store defines session persistence: an append-only event log per
// session plus a summary row for listing, session leases (which process
// runs a session, with fenced appends) and durable control requests. Implementations live in
// store/sqlite, store/postgres and store/memory and all pass the
// conformance suite in store/storetest.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/agentloop/agentloop/loop"
)

// Store persists session logs.
type Store interface {
	loop.Log
	// LoadAfter returns the events of a session with Seq > after, in order:
	// an empty slice when there are none yet, ErrNotFound when the session
	// does not exist. LoadAfter(ctx, id, 0) returns what Load returns. A
	// reader that resumes from the last sequence number it saw reads only
	// what it missed.
	LoadAfter(ctx context.Context, sessionID string, after int64) ([]loop.Event, error)
	// Watch calls fn with a Notice after every commit (see Notice and
	// Watchers): per session in order, on the committing goroutine, so fn
	// must never block. The returned function stops the calls.
	Watch(fn func(Notice)) (stop func())
	// List returns session summaries, newest first, matching the filter.
	List(ctx context.Context, f Filter) ([]loop.Summary, error)
	// Delete removes a session: its log, summary, lease and controls. It
	// fails with ErrNotFound when there is no such session.
	Delete(ctx context.Context, sessionID string) error
	Leases
	Controls
	Keys
	Prompts
	// Close flushes pending appends and releases the store.
	Close() error
}

// Filter selects sessions for List. Zero values select everything.
type Filter struct {
	// Status keeps only sessions in one of these statuses.
	Status []loop.Status
	// Unfinished keeps only sessions whose status is not final.
	Unfinished bool
	// Tenant, when set, keeps only that tenant's sessions.
	Tenant string
	// CreatedAfter and CreatedBefore, when set, keep sessions created in
	// that range (after inclusive, before exclusive).
	CreatedAfter, CreatedBefore time.Time
	// Workspace, when set, keeps sessions working in that directory.
	Workspace string
	// Labels keeps sessions that carry every one of these labels.
	Labels map[string]string
	// ForkedFrom, when set, keeps the sessions forked from that session
	// (its direct forks, not theirs).
	ForkedFrom string

	Limit  int
	Offset int
}

// Re-exported sentinels, so callers of a Store need not import loop.
var (
	ErrNotFound    = loop.ErrNotFound
	ErrSeqConflict = loop.ErrSeqConflict
)

// ErrClosed is returned (wrapped) by a Store used after Close.
var ErrClosed = errors.New("store is closed")
