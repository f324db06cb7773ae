// Package appendq is the hand-over of writes between the goroutines that
// call a store and the store's one writer goroutine, shared by the SQLite
// and PostgreSQL stores: a request is queued, then either taken by the
// writer (which then always reports its outcome) or abandoned by a caller
// whose context ended first (and never written).
package appendq

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store/internal/appendcheck"
)

// Request is one write waiting for the writer.
type Request struct {
	Ctx  context.Context
	Runs []appendcheck.Run
	// Data[i][j] is the encoded payload of Runs[i].Events[j].
	Data [][][]byte
	// Fenced appends need Token to be the session's lease token.
	Fenced bool
	Token  int64
	// Acquire, when set, takes the session's lease with the append
	// (store.LeaseStarter); the writer fills in what it granted.
	Acquire *Acquisition

	state atomic.Int32
	// Exactly one of done and notify receives the outcome.
	done   chan<- error
	notify func(error)
}

// Acquisition is a lease taken with an append: the owner and time to
// live asked for, and the token and expiry the writer granted (read by
// the caller once the request is answered without error).
type Acquisition struct {
	Owner   string
	TTL     time.Duration
	Token   int64
	Expires time.Time
}

const (
	queued int32 = iota
	taken
	abandoned
)

// New checks and encodes events for an append; the outcome goes to done
// or, when done is nil, to notify. A nil request and error mean there is
// nothing to write. An append someone waits for (done) is encoded here, on
// the caller's goroutine, so many callers encode in parallel; one nobody
// waits for (notify: a session committing behind its next steps) is
// encoded by the writer as it takes it, off the session's way.
func New(ctx context.Context, events []loop.Event, fenced bool, token int64, done chan<- error, notify func(error)) (*Request, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, nil
	}
	runs, err := appendcheck.Split(events)
	if err != nil {
		return nil, err
	}
	r := &Request{Ctx: ctx, Runs: runs, Fenced: fenced, Token: token, done: done, notify: notify}
	if done != nil {
		if err := r.encode(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// encode fills Data, once (New may have filled it already). The
// payloads are encoded one after another into one buffer, and Data slices
// it: one allocation for a request's payloads rather than one each.
func (r *Request) encode() error {
	if r.Data != nil || len(r.Runs) == 0 {
		return nil
	}
	n := r.Size()
	buf := make([]byte, 0, 96*n) // a short session averages 78 bytes a payload
	ends := make([]int, n)
	k := 0
	for _, run := range r.Runs {
		for _, e := range run.Events {
			var err error
			if buf, err = e.AppendData(buf); err != nil {
				return err
			}
			ends[k] = len(buf)
			k++
		}
	}
	data := make([][][]byte, len(r.Runs))
	k, start := 0, 0
	for i, run := range r.Runs {
		data[i] = make([][]byte, len(run.Events))
		for j := range run.Events {
			data[i][j] = buf[start:ends[k]:ends[k]]
			start = ends[k]
			k++
		}
	}
	r.Data = data
	return nil
}

// Op is a request that is not an append (the store says what it does),
// reporting to done.
func Op(ctx context.Context, done chan<- error) *Request {
	return &Request{Ctx: ctx, done: done}
}

// Finish delivers the outcome.
func (r *Request) Finish(err error) {
	if r.notify != nil {
		r.notify(err)
		return
	}
	r.done <- err
}

// Take claims a queued request for the writer, which must then Finish it,
// and encodes it if New did not. A request whose caller's context ended
// while it was queued, or whose events cannot be encoded, is finished
// here, unwritten, and Take reports false.
func (r *Request) Take() bool {
	if err := r.Ctx.Err(); err != nil {
		if r.state.CompareAndSwap(queued, abandoned) {
			r.Finish(err)
		}
		return false
	}
	if !r.state.CompareAndSwap(queued, taken) {
		return false
	}
	if err := r.encode(); err != nil {
		r.Finish(err)
		return false
	}
	return true
}

// Wait waits for the outcome of a request that reports to done. When ctx
// ends first it abandons the request if the writer has not taken it yet;
// once taken, the outcome is awaited: the caller always learns whether
// its events are stored.
func (r *Request) Wait(ctx context.Context, done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(queued, abandoned) {
			return ctx.Err()
		}
		return <-done
	}
}

// Size is how many events the request carries.
func (r *Request) Size() int {
	n := 0
	for _, run := range r.Runs {
		n += len(run.Events)
	}
	return n
}

// Position finds where each run of r stands against its session's stored
// log, the same way in every store: summary returns a session's stored
// summary (from a cache unless fresh: the cache may be behind another
// process), alreadyStored whether a run's events are all stored already,
// identical. A run that continues the log is to be written; one already
// stored is a retry, with nothing to write (stored[k]); anything else is
// a conflict, returned as the request's own error.
func (r *Request) Position(
	summary func(id string, fresh bool) (loop.Summary, error),
	alreadyStored func(run appendcheck.Run, data [][]byte, last int64) (bool, error),
) (sums []loop.Summary, stored []bool, reqErr, fatal error) {
	sums, stored = make([]loop.Summary, len(r.Runs)), make([]bool, len(r.Runs))
	for k, run := range r.Runs {
		sum, err := summary(run.SessionID, false)
		if err != nil {
			return nil, nil, nil, err
		}
		if run.First != sum.LastSeq+1 {
			if sum, err = summary(run.SessionID, true); err != nil {
				return nil, nil, nil, err
			}
		}
		if run.First != sum.LastSeq+1 {
			same, err := alreadyStored(run, r.Data[k], sum.LastSeq)
			if err != nil {
				return nil, nil, nil, err
			}
			if !same {
				return nil, nil, appendcheck.Conflict(run, sum.LastSeq), nil
			}
			stored[k] = true
		}
		sums[k] = sum
	}
	return sums, stored, nil, nil
}
