package transport

import (
	"io"
	"sync"
)

// A Body is a request's JSON, encoded again for every attempt that needs
// it. The bytes an attempt sends are let go once written: a session that
// waits seconds for a model's reply (with a conversation of many KiB) does
// not hold its request through the wait, and a thousand waiting sessions
// do not hold a thousand requests. The bytes are not kept for a retry:
// the request is encoded again, which costs far less than the wait.
type Body struct {
	next   []byte                 // encoded already: the first attempt's
	encode func() ([]byte, error) // encodes the same request again
}

// NewBody is a body whose first attempt sends first and whose later ones
// (retries, net/http's rewinds of a request it must send again) send what
// encode returns, which must be the same bytes.
func NewBody(first []byte, encode func() ([]byte, error)) *Body {
	return &Body{next: first, encode: encode}
}

// take returns the bytes for an attempt; the Body keeps no hold on them.
func (b *Body) take() ([]byte, error) {
	if n := b.next; n != nil {
		b.next = nil
		return n, nil
	}
	return b.encode()
}

// sentBody is one attempt's request body. It drops its bytes as soon as
// they are read to the end, or the body is closed (net/http closes a
// request's body once written, or on failure), whichever comes first. The
// mutex is there because net/http may close the body on another goroutine
// than the one reading it.
type sentBody struct {
	mu sync.Mutex
	b  []byte
}

func (s *sentBody) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.b) == 0 {
		s.b = nil
		return 0, io.EOF
	}
	n := copy(p, s.b)
	if s.b = s.b[n:]; len(s.b) == 0 {
		s.b = nil // written: let go of the bytes
	}
	return n, nil
}

func (s *sentBody) Close() error {
	s.mu.Lock()
	s.b = nil
	s.mu.Unlock()
	return nil
}

// again is the request's GetBody: the same bytes, encoded again.
func (b *Body) again() (io.ReadCloser, error) {
	n, err := b.encode()
	if err != nil {
		return nil, err
	}
	return &sentBody{b: n}, nil
}
