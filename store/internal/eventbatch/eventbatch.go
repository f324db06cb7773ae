// Package eventbatch is the stored form of a batch: the events of one
// append to one session, kept in one row (first_seq..last_seq, in order).
// One row per append rather than per event: an iteration's five events
// cost one row and one index entry, not five of each, which is most of
// what a commit writes. Both SQL stores keep their logs this way.
//
// Each event is framed as a header line, then its payload and a newline:
//
//	<type> <version> <time> <length>\n<payload: length bytes of JSON>\n
//
// time is Unix nanoseconds (UnixNano). A batch reads as text, one event
// per two lines; the length makes it safe whatever the payload holds.
package eventbatch

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/agentloop/agentloop/loop"
)

// AppendFrame appends one event's frame to b.
func AppendFrame(b []byte, typ string, version int, at int64, payload []byte) []byte {
	b = append(b, typ...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(version), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, at, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, '\n')
	b = append(b, payload...)
	return append(b, '\n')
}

// AppendRun appends the frames of events, whose encoded payloads are
// payloads, to b: one append's batch. at is an event's time as the store
// keeps it.
func AppendRun(b []byte, events []loop.Event, payloads [][]byte, at func(time.Time) int64) []byte {
	size := 0
	for j, e := range events {
		size += len(e.Type) + len(payloads[j]) + 48 // the header's numbers fit in 48 bytes
	}
	b = slices.Grow(b, size)
	for j, e := range events {
		b = AppendFrame(b, string(e.Type), e.Version, at(e.Time), payloads[j])
	}
	return b
}

// Frame is one event read from a batch. Type and Payload alias the batch.
type Frame struct {
	Type    []byte
	Version int
	At      int64
	Payload []byte
}

// ErrBadFrame is a frame that does not follow the format.
var ErrBadFrame = errors.New("malformed event frame")

// Next reads the frame at the start of b and returns the rest.
func Next(b []byte) (f Frame, rest []byte, err error) {
	eol := bytes.IndexByte(b, '\n')
	if eol < 0 {
		return f, nil, ErrBadFrame
	}
	typ, h, ok1 := bytes.Cut(b[:eol], []byte{' '})
	ver, h, ok2 := bytes.Cut(h, []byte{' '})
	tm, size, ok3 := bytes.Cut(h, []byte{' '})
	version, err1 := strconv.Atoi(string(ver))
	at, err2 := strconv.ParseInt(string(tm), 10, 64)
	n, err3 := strconv.Atoi(string(size))
	body := b[eol+1:]
	if !ok1 || !ok2 || !ok3 || len(typ) == 0 || err1 != nil || err2 != nil || err3 != nil || n < 0 || n >= len(body) || body[n] != '\n' {
		return f, nil, ErrBadFrame
	}
	return Frame{Type: typ, Version: version, At: at, Payload: body[:n]}, body[n+1:], nil
}

// Each calls fn with every event of the batch holding events first..last,
// in order, and fails if the batch does not hold exactly those.
func Each(first, last int64, b []byte, fn func(seq int64, f Frame) error) error {
	for seq := first; seq <= last; seq++ {
		f, rest, err := Next(b)
		if err != nil {
			return fmt.Errorf("event %d: %w", seq, err)
		}
		b = rest
		if err := fn(seq, f); err != nil {
			return err
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("events %d–%d hold more than %d events", first, last, last-first+1)
	}
	return nil
}

// Times are stored as Unix nanoseconds; the zero time.Time, which has no
// such representation, as ZeroTime. The stores refuse times out of range
// before they are written (appendcheck).
const ZeroTime = math.MinInt64

// UnixNano is t as stored.
func UnixNano(t time.Time) int64 {
	if t.IsZero() {
		return ZeroTime
	}
	return t.UnixNano()
}

// Time is the time stored as n, in UTC.
func Time(n int64) time.Time {
	if n == ZeroTime {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Decode appends to events the events of a session's batch holding
// first..last whose Seq is above after. They must carry on from events:
// the first one kept is after+len(events)+1. A batch that breaks the
// format or the order is reported as a corrupt log; an event that does
// not decode, as DecodeEvent says.
func Decode(events []loop.Event, sessionID string, after, first, last int64, b []byte) ([]loop.Event, error) {
	var decodeErr error
	err := Each(first, last, b, func(seq int64, f Frame) error {
		if seq <= after {
			return nil
		}
		if want := after + int64(len(events)) + 1; seq != want {
			return fmt.Errorf("event %d where %d was expected", seq, want)
		}
		// DecodeEvent copies what it keeps, so the batch may be reused.
		e, err := loop.DecodeEvent(sessionID, seq, loop.EventType(f.Type), f.Version, Time(f.At), f.Payload)
		if err != nil {
			decodeErr = err
			return err
		}
		events = append(events, e)
		return nil
	})
	switch {
	case decodeErr != nil:
		return events, decodeErr
	case err != nil:
		return events, fmt.Errorf("session %s: stored log is corrupt: %w", sessionID, err)
	}
	return events, nil
}

// Retried checks whether an append is stored already — a retry of one
// whose commit was in doubt — against the stored batches that overlap
// its range, given to Batch in order: Same reports whether every one of
// its events is stored with the same type, version, time and payload.
type Retried struct {
	Events []loop.Event
	// Payloads are the events' encoded payloads, as written.
	Payloads [][]byte
	// At is an event's time as the store writes it.
	At func(time.Time) int64

	n       int
	differs bool
}

// Batch compares the stored batch holding first..last.
func (r *Retried) Batch(first, last int64, b []byte) error {
	return Each(first, last, b, func(seq int64, f Frame) error {
		if r.differs || r.n >= len(r.Events) || seq < r.Events[0].Seq {
			return nil
		}
		e := r.Events[r.n]
		if seq != e.Seq || string(f.Type) != string(e.Type) || f.Version != e.Version || f.At != r.At(e.Time) || !bytes.Equal(f.Payload, r.Payloads[r.n]) {
			r.differs = true
			return nil
		}
		r.n++
		return nil
	})
}

// Same reports whether the batches given held every event, the same.
func (r *Retried) Same() bool { return !r.differs && r.n == len(r.Events) }
