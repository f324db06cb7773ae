package loop

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// commits is a session's way to its log: the events it recorded and has
// not handed over yet, and the commits it handed to an AsyncLog that have
// not reported. The session goroutine does everything except one thing:
// a timer may hand the buffer over while the session is busy in a long
// step (handOverLate), which is why the buffer is under a mutex.
type commits struct {
	id    string
	log   Log
	async AsyncLog // nil when the log cannot commit behind
	// ctx carries the session's values without its cancellation: what
	// happened is recorded even after a terminate.
	ctx context.Context

	mu  sync.Mutex
	buf []Event
	// bufp is buf's slot in eventBuffers: it travels with the buffer to
	// the commit and back to the pool when the commit reports.
	bufp     *[]Event
	inflight int         // commits handed over and not reported
	broken   bool        // a commit failed: nothing more is handed over late
	late     *time.Timer // hands the buffer over late (handOverLate)
	armed    bool        // late is set to fire for events in the buffer
	handed   time.Time   // when the buffer was last handed over
	// pending receives the outcomes of the commits in flight, in order.
	pending chan error
}

// eventBuffers holds the buffers sessions collect events in between
// handovers. A buffer goes to a commit and comes back when it reports; one
// that grew to a burst of events is kept for the next session rather than
// grown again there.
var eventBuffers = sync.Pool{New: func() any { return new([]Event) }}

// maxPooledEvents bounds the buffers kept: one that grew in a rare flood of
// events is left to the garbage collector.
const maxPooledEvents = 256

// putEventBuffer empties evs and returns it to the pool in slot p.
func putEventBuffer(p *[]Event, evs []Event) {
	clear(evs) // drop the events for the garbage collector
	if p == nil || cap(evs) > maxPooledEvents {
		return
	}
	*p = evs[:0]
	eventBuffers.Put(p)
}

// maxInflight bounds the commits one session has in flight: a session that
// outruns its store waits for the oldest.
const maxInflight = 8

// commitGrace is the longest events wait in the buffer, behind a commit in
// flight, before they are handed over anyway: watchers see what a session
// did within about this much (plus the store's own commit interval) even
// while it is busy in a long model call or tool. It also sets how many
// commits a fast session costs: one per commitGrace at most. Each commit
// costs the store far more than the events in it (a SQLite commit of a
// few rows writes ten pages), and a session whose model answers within a
// millisecond or two finishes 11 iterations in under 3 ms: at 5 ms it
// commits once, at its end, instead of twice (measured in the history of
// bench/README.md). 5 ms is still far below what a person watching can
// tell apart, and far below the 50 ms the service promises its watchers.
const commitGrace = 5 * time.Millisecond

func (c *commits) init(id string, log Log, ctx context.Context) {
	c.id, c.log, c.ctx = id, log, context.WithoutCancel(ctx)
	// As if handed over now: what a session records first waits up to
	// commitGrace for company, as later events do.
	c.handed = time.Now()
	c.async, _ = log.(AsyncLog)
	c.pending = make(chan error, maxInflight)
}

// add buffers an event.
func (c *commits) add(e Event) {
	c.mu.Lock()
	if c.bufp == nil {
		// Taken here rather than at the handover: a session waiting on a
		// long model call holds no empty buffer.
		c.bufp = eventBuffers.Get().(*[]Event)
		c.buf = (*c.bufp)[:0]
		if cap(c.buf) == 0 {
			c.buf = make([]Event, 0, 8)
		}
	}
	c.buf = append(c.buf, e)
	c.mu.Unlock()
}

// behind hands the buffer to a commit that overlaps the session's next
// steps, when the log can commit behind (AsyncLog); otherwise it commits
// now (flush). The buffer is kept instead, to be handed over at a later
// step or commitGrace after its first event, whichever comes first, when
// the next step is expected to be brief, or when the session is fast — it
// handed over (or began) less than commitGrace ago: a fast session commits
// several steps at a time, not one commit each (a session shorter than
// commitGrace, once at its end), and a step's events usually travel with
// the next model call's commit rather than in a commit of their own. A
// slow session's events go behind the commit in flight at once.
//
// Commits in flight complete in the order they were handed over (the
// stores' writers are first in, first out), so the log stays in order; a
// flush follows all of them, so nothing that must be durable before an
// effect is left behind.
func (c *commits) behind(briefly bool) error {
	if c.async == nil {
		return c.flush()
	}
	if err := c.reap(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(c.buf) == 0:
	case briefly || c.inflight >= maxInflight || time.Since(c.handed) < commitGrace:
		c.armLate()
	default:
		c.handOver()
	}
	return nil
}

// armLate makes sure the buffer is handed over within about commitGrace.
// An armed timer is left alone: the buffer's oldest event set its
// deadline. mu held.
func (c *commits) armLate() {
	switch {
	case c.armed:
	case c.late == nil:
		c.late = time.AfterFunc(commitGrace, c.handOverLate)
	default:
		c.late.Reset(commitGrace)
	}
	c.armed = true
}

// disarm stops the late handover: the buffer was taken. mu held.
func (c *commits) disarm() {
	if c.armed {
		c.late.Stop()
		c.armed = false
	}
}

// handOverLate hands over what waited commitGrace.
func (c *commits) handOverLate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = false
	if len(c.buf) > 0 && !c.broken && c.inflight < maxInflight {
		c.handOver()
	}
}

// handOver gives the buffer to an asynchronous commit. mu held.
func (c *commits) handOver() { c.handOverTo(nil) }

// handOverTo is handOver that also reports the commit's outcome to also,
// when not nil (which must have room for it). mu held.
func (c *commits) handOverTo(also chan<- error) {
	c.disarm()
	evs, p := c.buf, c.bufp
	c.buf, c.bufp = nil, nil
	c.inflight++
	c.handed = time.Now()
	c.async.AppendAsync(c.ctx, evs, func(err error) {
		// The log keeps no reference to the events once it reports
		// (AsyncLog): the buffer goes back to the pool now, not when the
		// session next looks — which may be a whole model call later,
		// holding the events' payloads all that time.
		putEventBuffer(p, evs)
		c.pending <- err
		if also != nil {
			also <- err
		}
	})
}

// handOverWatched hands the buffer (a new session's start) to a commit at
// once and returns where that commit's outcome is also reported. The
// session's own accounting (pending) sees it as any other commit. With a
// log that cannot commit behind, it commits now.
func (c *commits) handOverWatched() <-chan error {
	out := make(chan error, 1)
	if c.async == nil {
		out <- c.flush()
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handOverTo(out)
	return out
}

// handOverNow hands the buffer to a commit at once, whatever the grace,
// once the commits that finished are accounted for and one in flight has
// made room (the outcome channel holds maxInflight: the store's goroutine
// must never block reporting one more). It reports a commit in flight that
// failed.
func (c *commits) handOverNow() error {
	if err := c.reap(); err != nil {
		return err
	}
	for {
		c.mu.Lock()
		if len(c.buf) == 0 || c.inflight < maxInflight {
			break
		}
		c.mu.Unlock()
		if err := c.waitOne(); err != nil {
			return err
		}
	}
	defer c.mu.Unlock()
	if len(c.buf) > 0 {
		c.handOver()
	}
	return nil
}

// flush makes the buffer and every commit in flight durable. The buffer is
// appended before the commits in flight are awaited: a plain Append is one
// the store commits at once, and the commits in flight — queued before it —
// commit no later than it does, instead of being held for company (see
// AsyncLog).
func (c *commits) flush() error {
	c.mu.Lock()
	evs, p := c.buf, c.bufp
	c.buf, c.bufp = nil, nil
	c.disarm()
	c.mu.Unlock()
	var err error
	if len(evs) > 0 {
		err = c.log.Append(c.ctx, evs...)
	}
	if perr := c.waitPending(); perr != nil {
		// A failed commit in flight explains a failure here (a gap in
		// the log), so it is the one reported.
		err = perr
	} else if err != nil {
		err = fmt.Errorf("session %s: saving %d events: %w", c.id, len(evs), notSaved{err})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.broken = true
		c.buf = append(evs, c.buf...) // kept: nothing recorded is dropped
		if c.bufp == nil {
			c.bufp = p
		}
		return err
	}
	if c.bufp == nil {
		clear(evs) // the store keeps none of them after a plain Append
		c.buf, c.bufp = evs[:0], p
	} else {
		putEventBuffer(p, evs)
	}
	return nil
}

// settled says whether everything the session recorded is durable:
// nothing buffered, nothing in flight, and no commit failed. Every event
// leaves the buffer only by a commit, and a failed one marks it broken.
func (c *commits) settled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.broken && len(c.buf) == 0 && c.inflight == 0
}

// waitPending waits for every commit in flight and reports the first
// failure.
func (c *commits) waitPending() error {
	var first error
	for c.inflightNow() > 0 {
		if err := c.waitOne(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (c *commits) inflightNow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight
}

// waitOne waits for the oldest commit in flight.
func (c *commits) waitOne() error {
	return c.reported(<-c.pending)
}

// reap takes the outcomes of commits that finished, without waiting.
func (c *commits) reap() error {
	for {
		select {
		case err := <-c.pending:
			if err := c.reported(err); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// reported accounts for one commit's outcome.
func (c *commits) reported(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
	if err != nil {
		c.broken = true
		return fmt.Errorf("session %s: saving events: %w", c.id, notSaved{err})
	}
	return nil
}

// close returns the buffer to the pool, when empty, once the session
// stopped running here (events still buffered are left to the late
// handover). Commits still in flight return theirs when they report.
func (c *commits) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.buf) == 0 && c.bufp != nil {
		putEventBuffer(c.bufp, c.buf)
		c.buf, c.bufp = nil, nil
	}
}
