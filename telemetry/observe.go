package telemetry

import (
	"context"
	"sync"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// Observe turns what st commits from now on into spans and measurements.
// The returned function stops watching and waits until every notice taken
// so far is recorded (call it before Shutdown). With neither traces nor
// metrics configured it does not watch at all.
//
// Only notices that carry events count: those are this process's own
// commits. Sessions other processes run on a shared database are traced
// and measured by those processes.
func (t *Telemetry) Observe(st store.Store) (stop func()) {
	if !t.active() {
		return func() {}
	}
	o := &observer{t: t, st: st, wake: make(chan struct{}, 1), done: make(chan struct{}), sessions: map[string]*sessionTrace{}}
	stopWatch := st.Watch(o.take)
	go o.run()
	var once sync.Once
	return func() {
		once.Do(func() {
			stopWatch()
			o.mu.Lock()
			o.closed = true
			o.mu.Unlock()
			o.signal()
			<-o.done
		})
	}
}

type notice struct {
	events []loop.Event
	at     time.Time // when the commit was heard of
}

// observer records notices on its own goroutine: the store's writer only
// appends to a slice, so telemetry never slows a commit.
type observer struct {
	t  *Telemetry
	st store.Store

	mu      sync.Mutex
	pending []notice
	closed  bool
	wake    chan struct{}
	done    chan struct{}

	sessions map[string]*sessionTrace // owned by run
}

func (o *observer) take(n store.Notice) {
	if len(n.Events) == 0 {
		return
	}
	o.mu.Lock()
	o.pending = append(o.pending, notice{events: n.Events, at: time.Now()})
	o.mu.Unlock()
	o.signal()
}

func (o *observer) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *observer) run() {
	defer close(o.done)
	var batch []notice
	for {
		<-o.wake
		o.mu.Lock()
		batch, o.pending = o.pending, batch[:0]
		closed := o.closed
		o.mu.Unlock()
		for _, n := range batch {
			for _, e := range n.events {
				o.record(e, n.at)
			}
		}
		clear(batch)
		if closed {
			o.endAll()
			return
		}
	}
}

// record takes one committed event's measurements and spans.
func (o *observer) record(e loop.Event, heard time.Time) {
	ctx := context.Background()
	in := o.t.inst
	in.events.Add(ctx, 1)
	in.commitLag.Record(ctx, max(heard.Sub(e.Time), 0).Seconds())
	s := o.session(e)
	switch d := e.Data.(type) {
	case *loop.IterationStarted:
		in.iterations.Add(ctx, 1)
	case *loop.ModelResponded:
		m := s.measures()
		in.modelCalls.Add(ctx, 1, m.ok)
		in.opDuration.Record(ctx, ms(d.DurationMS), m.call)
		in.tokenUsage.Record(ctx, int64(d.Usage.InputTokens), m.input)
		in.tokenUsage.Record(ctx, int64(d.Usage.OutputTokens), m.output)
		in.cost.Add(ctx, d.CostUSD, m.call)
	case *loop.ModelFailed:
		attrs := s.modelAttrs()
		in.modelCalls.Add(ctx, 1, s.measures().failed)
		in.opDuration.Record(ctx, ms(d.DurationMS), withAttrs(append(attrs, errorType(modelErrorType(d)))))
	case *loop.ToolFinished:
		attrs := toolAttrs(d)
		in.toolCalls.Add(ctx, 1, withAttrs(attrs))
		in.toolSeconds.Record(ctx, ms(d.DurationMS), withAttrs(attrs))
	case *loop.SessionEnded:
		in.ended.Add(ctx, 1, withAttrs(stopAttrs(d.Status, d.Reason)))
	case *loop.SessionPaused:
		in.ended.Add(ctx, 1, withAttrs(stopAttrs(loop.StatusPaused, d.Reason)))
	case *loop.SessionWaiting:
		in.ended.Add(ctx, 1, withAttrs(stopAttrs(loop.StatusWaiting, d.Reason)))
	}
	if o.t.tracer != nil {
		s.span(o.t.tracer, &o.t.calls, e)
	}
	switch e.Data.(type) {
	case *loop.SessionEnded, *loop.SessionPaused, *loop.SessionWaiting:
		delete(o.sessions, e.SessionID) // the process lets go of it until it runs again
		o.t.calls.drop(e.SessionID)
	}
}

// session is what the observer knows of e's session: its model, from
// session.started, read back from the store for a session this process
// resumed rather than started.
func (o *observer) session(e loop.Event) *sessionTrace {
	if s, ok := o.sessions[e.SessionID]; ok {
		return s
	}
	s := &sessionTrace{id: e.SessionID}
	if d, ok := e.Data.(*loop.SessionStarted); ok {
		s.setSpec(d)
	} else if first, err := o.st.LoadAfter(context.Background(), e.SessionID, 0); err == nil && len(first) > 0 {
		if d, ok := first[0].Data.(*loop.SessionStarted); ok {
			s.setSpec(d)
		}
	}
	o.sessions[e.SessionID] = s
	return s
}

// endAll ends the spans of sessions still open when observing stops (the
// process is stopping with them running).
func (o *observer) endAll() {
	for id, s := range o.sessions {
		s.end(time.Now(), "", "")
		delete(o.sessions, id)
	}
}

func ms(d int64) float64 { return float64(max(d, 0)) / 1000 }
