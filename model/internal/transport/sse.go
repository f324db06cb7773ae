package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// LineReader reads newline-terminated lines without allocating per line.
type LineReader struct {
	r    *bufio.Reader
	long []byte
}

// NewLineReader reads from r with a 64 KiB buffer.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Line returns the next line without its "\n" or "\r\n". The slice is valid
// until the next call. A final line without a newline is returned before
// io.EOF.
func (l *LineReader) Line() ([]byte, error) {
	line, err := l.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		l.long = append(l.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = l.r.ReadSlice('\n')
			l.long = append(l.long, line...)
		}
		line = l.long
	}
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, nil
}

// SSEReader reads server-sent events: "event:" and "data:" fields, comment
// lines starting with ":" ignored, several data lines joined with "\n", a
// blank line ending the event.
type SSEReader struct {
	lines *LineReader
	event []byte
	data  []byte
	// Events counts the events returned so far, for error messages.
	Events int
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{lines: NewLineReader(r)}
}

// Next returns the next event's name (empty when it had no "event:" line)
// and its data. Both slices are valid until the next call. At the end of the
// stream it returns io.EOF; an event left without its closing blank line is
// still returned first.
func (s *SSEReader) Next() (event, data []byte, err error) {
	s.event = s.event[:0]
	s.data = s.data[:0]
	hasData, hasEvent := false, false
	for {
		line, err := s.lines.Line()
		if err != nil {
			if err == io.EOF && (hasData || hasEvent) {
				s.Events++
				return s.event, s.data, nil
			}
			return nil, nil, err
		}
		if len(line) == 0 {
			if hasData || hasEvent {
				s.Events++
				return s.event, s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
		case "event":
			s.event = append(s.event[:0], value...)
			hasEvent = true
		}
	}
}

var sseReaders sync.Pool

// GetSSEReader is NewSSEReader with the reader and its 64 KiB buffer taken
// from a pool; PutSSEReader gives it back. The slices Next returned are
// invalid after that.
func GetSSEReader(r io.Reader) *SSEReader {
	s, ok := sseReaders.Get().(*SSEReader)
	if !ok {
		return NewSSEReader(r)
	}
	s.lines.r.Reset(r)
	return s
}

// PutSSEReader returns s to the pool, unless an event or line made its
// buffers grow very large.
func PutSSEReader(s *SSEReader) {
	if cap(s.data) > 1<<20 || cap(s.event) > 1<<20 || cap(s.lines.long) > 1<<20 {
		return
	}
	s.lines.r.Reset(nil)
	s.event, s.data, s.lines.long = s.event[:0], s.data[:0], s.lines.long[:0]
	s.Events = 0
	sseReaders.Put(s)
}
