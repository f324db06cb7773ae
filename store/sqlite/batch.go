package sqlite

import (
	"bytes"
	"errors"
	"strconv"
)

// A batch is the events of one append to one session, stored in one row of
// event_batches (first_seq..last_seq, in order). One row per append rather
// than per event: an iteration's five events cost one row and one index
// entry, not five of each, which is most of what a commit writes.
//
// Each event is framed as a header line, then its payload and a newline:
//
//	<type> <version> <time> <length>\n<payload: length bytes of JSON>\n
//
// time is Unix nanoseconds (encodeTime). A batch reads as text, one event
// per two lines, e.g. `SELECT CAST(events AS TEXT) FROM event_batches`; the
// length makes it safe whatever the payload holds.

// appendFrame appends one event's frame to b.
func appendFrame(b []byte, typ string, version int, at int64, payload []byte) []byte {
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

// frame is one event read from a batch. payload aliases the batch.
type frame struct {
	typ     []byte
	version int
	at      int64
	payload []byte
}

var errBadFrame = errors.New("malformed event frame")

// nextFrame reads the frame at the start of b and returns the rest.
func nextFrame(b []byte) (f frame, rest []byte, err error) {
	eol := bytes.IndexByte(b, '\n')
	if eol < 0 {
		return f, nil, errBadFrame
	}
	typ, h, ok1 := bytes.Cut(b[:eol], []byte{' '})
	ver, h, ok2 := bytes.Cut(h, []byte{' '})
	tm, size, ok3 := bytes.Cut(h, []byte{' '})
	version, err1 := strconv.Atoi(string(ver))
	at, err2 := strconv.ParseInt(string(tm), 10, 64)
	n, err3 := strconv.Atoi(string(size))
	body := b[eol+1:]
	if !ok1 || !ok2 || !ok3 || len(typ) == 0 || err1 != nil || err2 != nil || err3 != nil || n < 0 || n >= len(body) || body[n] != '\n' {
		return f, nil, errBadFrame
	}
	return frame{typ: typ, version: version, at: at, payload: body[:n]}, body[n+1:], nil
}
