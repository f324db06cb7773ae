package appendq

import "time"

// Pace spaces out the writer's commits of appends nobody waits for
// (AppendAsync): after a commit, such appends are held up to Interval so
// that what follows them shares their transaction. A session running fast
// then commits a few iterations at a time instead of one commit each —
// a commit costs far more than the events in it — and its watchers see
// its events at most Interval later. Anything someone waits for (a plain
// Append, an op) is committed at once, together with whatever is held.
type Pace struct {
	// Interval is the least time between the end of a commit and the
	// start of the next while only appends nobody waits for are queued.
	// Zero commits everything at once.
	Interval time.Duration

	last  time.Time // when the last commit ended
	timer *time.Timer
}

// Hold returns a channel that fires when the writer should stop waiting
// for more requests and commit what it has gathered, or nil when it should
// commit now: the batch holds a request someone waits for (urgent), or the
// last commit ended Interval ago or more.
func (p *Pace) Hold(urgent bool) <-chan time.Time {
	if urgent || p.Interval <= 0 {
		return nil
	}
	wait := p.Interval - time.Since(p.last)
	if wait <= 0 {
		return nil
	}
	if p.timer == nil {
		p.timer = time.NewTimer(wait)
	} else {
		p.timer.Reset(wait) // since Go 1.23 a reset timer delivers no stale tick
	}
	return p.timer.C
}

// Committed records the end of a commit.
func (p *Pace) Committed() { p.last = time.Now() }

// Waited reports whether a caller waits for the request's outcome (a plain
// Append or an op), as opposed to being told later (AppendAsync).
func (r *Request) Waited() bool { return r.notify == nil }
