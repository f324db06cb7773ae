package server

import (
	"sync"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// observed are counts taken from the store's commit notices: what sessions
// did since the server started, and how far behind their events reach
// watchers.
type observed struct {
	mu                    sync.Mutex
	events, iterations    uint64
	toolCalls, modelCalls uint64
	modelMillis           uint64 // summed model call durations
	tokens                uint64
	costUSD               float64
	lagSum                time.Duration // event time → commit notice
	lagMax                time.Duration
}

// Observe counts what the store commits (call it once, with the server's
// store; it returns the function that stops counting). It runs on the
// store's writer, so it only adds numbers.
func (s *Server) Observe(st store.Store) (stop func()) {
	return st.Watch(func(n store.Notice) {
		now := time.Now()
		o := &s.obs
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, e := range n.Events {
			o.events++
			lag := now.Sub(e.Time)
			o.lagSum += lag
			o.lagMax = max(o.lagMax, lag)
			switch d := e.Data.(type) {
			case *loop.IterationStarted:
				o.iterations++
			case *loop.ToolFinished:
				o.toolCalls++
			case *loop.ModelResponded:
				o.modelCalls++
				o.modelMillis += uint64(max(d.DurationMS, 0))
				o.tokens += uint64(d.Usage.Total())
				o.costUSD += d.CostUSD
			}
		}
	})
}
