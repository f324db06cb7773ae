// Package appendcheck validates the events of one Append call before a store
// writes them, so every store rejects the same inputs with the same errors.
package appendcheck

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/loop"
)

// ErrInvalidEvent is returned (wrapped) for an event a store refuses to
// write: no session ID, no payload, a type that disagrees with its payload,
// a version below 1, or a time outside what stores can represent.
var ErrInvalidEvent = errors.New("invalid event")

// Run is the events of one session within an Append call, in order.
type Run struct {
	SessionID string
	// First and Last are the Seq of the first and last event.
	First, Last int64
	Events      []loop.Event
}

// Times must be zero or between these bounds (what int64 nanoseconds since
// the Unix epoch can hold, with a margin).
var (
	minTime = time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2260, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Split checks every event and groups the events by session, keeping the
// order in which sessions first appear. Within a call the events of one
// session must have consecutive Seq; whether the first one continues the
// stored log is for the store to check.
func Split(events []loop.Event) ([]Run, error) {
	if len(events) == 1 { // the common case: no map, no extra slice
		if err := check(events[0]); err != nil {
			return nil, err
		}
		e := events[0]
		return []Run{{SessionID: e.SessionID, First: e.Seq, Last: e.Seq, Events: events}}, nil
	}
	if oneSession(events) { // what the runner appends: no map, no copy
		for i, e := range events {
			if err := check(e); err != nil {
				return nil, err
			}
			if i > 0 && e.Seq != events[i-1].Seq+1 {
				return nil, fmt.Errorf("session %s: event %d (%s) does not follow event %d in the same append: %w", e.SessionID, e.Seq, e.Type, events[i-1].Seq, loop.ErrSeqConflict)
			}
		}
		return []Run{{SessionID: events[0].SessionID, First: events[0].Seq, Last: events[len(events)-1].Seq, Events: events}}, nil
	}
	var runs []Run
	index := map[string]int{}
	for _, e := range events {
		if err := check(e); err != nil {
			return nil, err
		}
		i, ok := index[e.SessionID]
		if !ok {
			index[e.SessionID] = len(runs)
			runs = append(runs, Run{SessionID: e.SessionID, First: e.Seq, Last: e.Seq - 1})
			i = len(runs) - 1
		}
		r := &runs[i]
		if e.Seq != r.Last+1 {
			return nil, fmt.Errorf("session %s: event %d (%s) does not follow event %d in the same append: %w", e.SessionID, e.Seq, e.Type, r.Last, loop.ErrSeqConflict)
		}
		r.Last = e.Seq
		r.Events = append(r.Events, e)
	}
	if len(runs) == 1 {
		runs[0].Events = events // same events, no copy kept
	}
	return runs, nil
}

func check(e loop.Event) error {
	switch {
	case e.SessionID == "":
		return fmt.Errorf("event %d (%s) has no session ID: %w", e.Seq, e.Type, ErrInvalidEvent)
	case e.Data == nil:
		return fmt.Errorf("session %s: event %d (%s) has no payload: %w", e.SessionID, e.Seq, e.Type, ErrInvalidEvent)
	case e.Data.EventType() != e.Type:
		return fmt.Errorf("session %s: event %d has type %q but a %s payload — build events with loop.NewEvent: %w", e.SessionID, e.Seq, e.Type, e.Data.EventType(), ErrInvalidEvent)
	case e.Version < 1:
		return fmt.Errorf("session %s: event %d (%s) has version %d — build events with loop.NewEvent: %w", e.SessionID, e.Seq, e.Type, e.Version, ErrInvalidEvent)
	case !e.Time.IsZero() && (e.Time.Before(minTime) || e.Time.After(maxTime)):
		return fmt.Errorf("session %s: event %d (%s) has time %s, outside %d–%d: %w", e.SessionID, e.Seq, e.Type, e.Time, minTime.Year(), maxTime.Year(), ErrInvalidEvent)
	case e.Seq < 1:
		return fmt.Errorf("session %s: event %d (%s): sequence numbers start at 1: %w", e.SessionID, e.Seq, e.Type, loop.ErrSeqConflict)
	}
	return nil
}

// Conflict is the error for a run that does not continue the stored log
// whose last event is last.
func Conflict(r Run, last int64) error {
	if r.First <= last {
		return fmt.Errorf("session %s: append of events %d–%d: event %d is already stored (last stored is %d) — another writer got there first or events were replayed: %w", r.SessionID, r.First, r.Last, r.First, last, loop.ErrSeqConflict)
	}
	return fmt.Errorf("session %s: append of events %d–%d leaves a gap: the log ends at %d, next must be %d: %w", r.SessionID, r.First, r.Last, last, last+1, loop.ErrSeqConflict)
}

func oneSession(events []loop.Event) bool {
	if len(events) == 0 {
		return false
	}
	for _, e := range events[1:] {
		if e.SessionID != events[0].SessionID {
			return false
		}
	}
	return true
}

// Identical reports whether two events are the same event: same session,
// sequence number, type, version, instant and payload. An Append whose
// events are all stored already and identical is a retry, and succeeds
// without writing.
func Identical(a, b loop.Event) bool {
	if a.SessionID != b.SessionID || a.Seq != b.Seq || a.Type != b.Type || a.Version != b.Version || !a.Time.Equal(b.Time) {
		return false
	}
	da, errA := a.EncodeData()
	db, errB := b.EncodeData()
	return errA == nil && errB == nil && bytes.Equal(da, db)
}
