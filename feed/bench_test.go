package feed_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/store/storetest"
)

// BenchmarkAppendWithFeed measures one-event appends to SQLite (one
// session, one after another) without a feed, and with a feed of 0 and 100
// readers of that session — readers that keep up, and readers blocked
// forever. The difference is what publishing costs the writer per append.
func BenchmarkAppendWithFeed(b *testing.B) {
	for _, c := range []struct {
		name    string
		feed    bool
		readers int
		blocked bool
	}{
		{"no-feed", false, 0, false},
		{"readers=0", true, 0, false},
		{"readers=100", true, 100, false},
		{"blocked=100", true, 100, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			if c.feed {
				f := feed.New(st)
				defer st.Watch(f.Publish)()
				startReaders(ctx, &wg, f, c.readers, c.blocked)
			}
			events := storetest.FakeEvents("bench", 1, int64(b.N))
			b.ResetTimer()
			for i := range b.N {
				if err := st.Append(ctx, events[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPublish measures Feed.Publish alone, with 0 and 100 readers of
// the session (blocked, so every send after the first few is refused).
func BenchmarkPublish(b *testing.B) {
	for _, readers := range []int{0, 100} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			f := feed.New(nopSource{})
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			startReaders(ctx, &wg, f, readers, true)
			n := store.Notice{SessionID: "bench", Events: storetest.FakeEvents("bench", 1, 1)}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				n.Seq = int64(i + 1)
				f.Publish(n)
			}
		})
	}
}

// startReaders starts n readers of session "bench" and returns once each
// has joined the feed (read its first event, or found the session empty).
func startReaders(ctx context.Context, wg *sync.WaitGroup, f *feed.Feed, n int, blocked bool) {
	joined := make(chan struct{}, n)
	for range n {
		wg.Go(func() {
			joined <- struct{}{} // Events joins before it reads the store
			for _, err := range f.Events(ctx, "bench", 0) {
				if err != nil {
					return
				}
				if blocked {
					<-ctx.Done()
					return
				}
			}
		})
	}
	for range n {
		<-joined
	}
}

type nopSource struct{}

func (nopSource) LoadAfter(context.Context, string, int64) ([]loop.Event, error) { return nil, nil }
