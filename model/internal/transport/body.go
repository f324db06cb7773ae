package transport

import (
	"bytes"
	"io"
	"sync"
)

// A Body is a request's JSON, encoded again for every attempt that needs
// it. The bytes an attempt sends are let go once written: a session that
// waits seconds for a model's reply (with a conversation of many KiB) does
// not hold its request through the wait, and a thousand waiting sessions
// do not hold a thousand requests. The bytes are not kept for a retry:
// the request is encoded again, which costs far less than the wait.
// Written bytes go back to a pool (putSent) for the next request's
// encoding: a session's requests grow with its conversation, and making
// each one afresh was the largest allocation of an iteration.
type Body struct {
	next   []byte // encoded already: the first attempt's
	encode func(buf []byte) ([]byte, error)
}

// EncodedBody encodes a request now, for its first attempt, and keeps
// encode for any later one (retries, net/http's rewinds of a request it
// must send again). encode appends the request to buf (empty, perhaps
// with room from an earlier request) and returns the result; it must
// encode the same bytes each time. An error is the first encoding's.
func EncodedBody(encode func(buf []byte) ([]byte, error)) (*Body, error) {
	first, err := encode(getSent())
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
	return b.encode(getSent())
}

// sentBuffers holds the bytes of requests net/http finished writing.
var sentBuffers sync.Pool // of *[]byte

// maxPooledSent bounds the buffers kept: a long conversation's request is
// left to the garbage collector rather than held for short ones.
const maxPooledSent = 64 << 10

// getSent returns an empty buffer to encode a request in.
func getSent() []byte {
	if p, ok := sentBuffers.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

// putSent gives back the bytes of a request net/http wrote: nothing reads
// them any more (attemptState.wrote).
func putSent(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledSent {
		return
	}
	b = b[:0]
	sentBuffers.Put(&b)
}

// again is the request's GetBody: the same bytes, encoded again, for
// net/http to send the request once more (after a connection it reused
// turned out closed). Those bytes are held until the attempt ends: the
// rewind is rare, and the reader it replaces may still be being read.
func (b *Body) again() (io.ReadCloser, error) {
	n, err := b.encode(nil)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(n)), nil
}

// JSONBody is EncodedBody of what build returns, encoded with AppendJSON
// (a fresh build for each encoding).
func JSONBody(build func() any) (*Body, error) {
	return EncodedBody(func(buf []byte) ([]byte, error) { return AppendJSON(buf, build()) })
}
