package transport

import (
	"bytes"
	"io"
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

// EncodedBody encodes a request now, for its first attempt, and keeps
// encode for any later one (retries, net/http's rewinds of a request it
// must send again); encode must return the same bytes each time. An error
// is the first encoding's.
func EncodedBody(encode func() ([]byte, error)) (*Body, error) {
	first, err := encode()
	if err != nil {
		return nil, err
	}
	return &Body{next: first, encode: encode}, nil
}

// take returns the bytes for an attempt; the Body keeps no hold on them.
func (b *Body) take() ([]byte, error) {
	if n := b.next; n != nil {
		b.next = nil
		return n, nil
	}
	return b.encode()
}

// again is the request's GetBody: the same bytes, encoded again, for
// net/http to send the request once more (after a connection it reused
// turned out closed). Those bytes are held until the attempt ends: the
// rewind is rare, and the reader it replaces may still be being read.
func (b *Body) again() (io.ReadCloser, error) {
	n, err := b.encode()
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(n)), nil
}

// JSONBody is EncodedBody of what build returns, encoded with EncodeJSON
// (a fresh build for each encoding).
func JSONBody(build func() any) (*Body, error) {
	return EncodedBody(func() ([]byte, error) {
		buf, err := EncodeJSON(build())
		if err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
}
