package main

import (
	"context"
	"sync"
)

// progressReader shows a session's committed events on the progress
// display, read from the store's feed like any other watcher: the display
// never runs on the store's writer, so it cannot slow a commit.
type progressReader struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	cond     *sync.Cond
	seq      int64 // the last event shown
	finished bool
}

// readProgress starts showing the events of session id after seq after.
func (e *cliEnv) readProgress(id string, after int64) *progressReader {
	ctx, cancel := context.WithCancel(context.Background())
	pr := &progressReader{cancel: cancel, done: make(chan struct{}), seq: after}
	pr.cond = sync.NewCond(&pr.mu)
	go func() {
		defer close(pr.done)
		defer pr.finish()
		for ev, err := range e.feed.Events(ctx, id, after) {
			if err != nil {
				return
			}
			e.progress.event(ev)
			pr.mu.Lock()
			pr.seq = ev.Seq
			pr.cond.Broadcast()
			pr.mu.Unlock()
		}
	}()
	return pr
}

func (pr *progressReader) finish() {
	pr.mu.Lock()
	pr.finished = true
	pr.cond.Broadcast()
	pr.mu.Unlock()
}

// showUpTo waits until every event up to seq is on the display, so the
// outcome is printed after the steps that led to it.
func (pr *progressReader) showUpTo(seq int64) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for pr.seq < seq && !pr.finished {
		pr.cond.Wait()
	}
}

// stop ends the reader.
func (pr *progressReader) stop() {
	pr.cancel()
	<-pr.done
}
