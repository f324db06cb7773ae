package feed_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/store/storetest"
)

// stores runs fn against each real store, connected to a feed.
func stores(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Run("memory", func(t *testing.T) {
		st := memory.New()
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "feed.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
}

func connect(t *testing.T, st store.Store, opts ...feed.Option) *feed.Feed {
	f := feed.New(st, opts...)
	t.Cleanup(st.Watch(f.Publish))
	return f
}

// collect reads a session's events from after until seq upto, in a
// goroutine; the result arrives on the returned channel.
func collect(ctx context.Context, f *feed.Feed, id string, after, upto int64) <-chan []loop.Event {
	out := make(chan []loop.Event, 1)
	go func() {
		var got []loop.Event
		for e, err := range f.Events(ctx, id, after) {
			if err != nil {
				break
			}
			got = append(got, e)
			if e.Seq >= upto {
				break
			}
		}
		out <- got
	}()
	return out
}

func appendAll(t *testing.T, st store.Store, id string, from, to, step int64) {
	t.Helper()
	for seq := from; seq <= to; seq += step {
		if err := st.Append(t.Context(), storetest.FakeEvents(id, seq, min(seq+step-1, to))...); err != nil {
			t.Fatalf("Append(%s, %d): %v", id, seq, err)
		}
	}
}

func requireSeqs(t *testing.T, got []loop.Event, id string, from, to int64) {
	t.Helper()
	if !storetest.EqualEvents(got, storetest.FakeEvents(id, from, to)) {
		seqs := make([]int64, len(got))
		for i, e := range got {
			seqs[i] = e.Seq
		}
		t.Fatalf("got events %v, want %d..%d once each, in order", seqs, from, to)
	}
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not finish", what)
		panic("unreachable")
	}
}

// A reader that starts from a sequence number while commits continue gets
// the stored rest, then the live events, with no gap and no duplicate.
func TestReplayThenLive(t *testing.T) {
	stores(t, func(t *testing.T, st store.Store) {
		f := connect(t, st)
		appendAll(t, st, "s", 1, 10, 1)
		readers := make([]<-chan []loop.Event, 5)
		done := make(chan struct{})
		go func() {
			defer close(done)
			appendAll(t, st, "s", 11, 300, 3)
		}()
		for i := range readers {
			readers[i] = collect(t.Context(), f, "s", int64(3*i), 300) // replay/live seam at different points
		}
		<-done
		for i, r := range readers {
			requireSeqs(t, wait(t, r, "reader"), "s", int64(3*i)+1, 300)
		}
	})
}

// A reader may ask for a session before it exists; it gets it from event 1.
func TestReaderBeforeSessionStarts(t *testing.T) {
	stores(t, func(t *testing.T, st store.Store) {
		f := connect(t, st)
		r := collect(t.Context(), f, "later", 0, 20)
		time.Sleep(10 * time.Millisecond) // let the reader find nothing first; passes either way
		appendAll(t, st, "later", 1, 20, 4)
		requireSeqs(t, wait(t, r, "reader"), "later", 1, 20)
	})
}

// One reader that never reads holds no one up: 1,000 appends to another
// session and to its own session complete, and other readers keep up.
// Then the blocked reader gets every event once, in order.
func TestBlockedReaderDoesNotStallCommits(t *testing.T) {
	stores(t, func(t *testing.T, st store.Store) {
		f := connect(t, st, feed.WithBuffer(4))
		appendAll(t, st, "slow", 1, 1, 1)
		release := make(chan struct{})
		blocked := make(chan struct{})
		slow := make(chan []loop.Event, 1)
		go func() {
			var got []loop.Event
			for e, err := range f.Events(t.Context(), "slow", 0) {
				if err != nil {
					break
				}
				if e.Seq == 1 {
					close(blocked)
					<-release // hold the reader: it reads nothing more
				}
				got = append(got, e)
				if e.Seq >= 1001 {
					break
				}
			}
			slow <- got
		}()
		<-blocked
		other := collect(t.Context(), f, "other", 0, 1000)
		appended := make(chan struct{})
		go func() {
			defer close(appended)
			appendAll(t, st, "other", 1, 1000, 1)
			appendAll(t, st, "slow", 2, 1001, 1)
		}()
		wait(t, appended, "2,000 appends while a reader is blocked")
		requireSeqs(t, wait(t, other, "the other session's reader"), "other", 1, 1000)
		close(release)
		requireSeqs(t, wait(t, slow, "the blocked reader"), "slow", 1, 1001)
	})
}

// A reader far behind (buffer of one commit, reading only after 500
// commits) falls back to the store and still sees every event once.
func TestLaggingReaderGetsEveryEventOnce(t *testing.T) {
	stores(t, func(t *testing.T, st store.Store) {
		f := connect(t, st, feed.WithBuffer(1))
		appendAll(t, st, "lag", 1, 1, 1)
		start := make(chan struct{})
		first := make(chan struct{})
		out := make(chan []loop.Event, 1)
		go func() {
			var got []loop.Event
			for e, err := range f.Events(t.Context(), "lag", 0) {
				if err != nil {
					break
				}
				if e.Seq == 1 {
					close(first)
					<-start
				}
				got = append(got, e)
				if e.Seq >= 1000 {
					break
				}
			}
			out <- got
		}()
		<-first
		appendAll(t, st, "lag", 2, 500, 1)
		close(start)
		appendAll(t, st, "lag", 501, 1000, 7) // and more while it catches up
		requireSeqs(t, wait(t, out, "the lagging reader"), "lag", 1, 1000)
	})
}

// A notice without events (as PostgreSQL's LISTEN/NOTIFY delivers from
// another process) makes readers read the new events from the store.
func TestNoticeWithoutEventsReadsStore(t *testing.T) {
	st := memory.New() // not watched: the feed hears only the bare notices
	defer st.Close()
	f := feed.New(st)
	r := collect(t.Context(), f, "p", 0, 9)
	for seq := int64(1); seq <= 9; seq += 3 {
		if err := st.Append(t.Context(), storetest.FakeEvents("p", seq, seq+2)...); err != nil {
			t.Fatal(err)
		}
		f.Publish(store.Notice{SessionID: "p", Seq: seq + 2})
	}
	requireSeqs(t, wait(t, r, "reader"), "p", 1, 9)
}

// Stopping the loop or ending the context ends the reader and removes it.
func TestReaderStops(t *testing.T) {
	st := memory.New()
	defer st.Close()
	f := connect(t, st)
	ctx, cancel := context.WithCancel(t.Context())
	r := collect(ctx, f, "c", 0, 1000)
	appendAll(t, st, "c", 1, 5, 1)
	cancel()
	got := wait(t, r, "cancelled reader")
	if len(got) > 5 {
		t.Fatalf("got %d events, at most 5 were written", len(got))
	}
}

// Deltas reach the readers of their session only; a full reader loses
// deltas but never blocks Publish.
func TestDeltas(t *testing.T) {
	var ds feed.Deltas
	ctx, cancel := context.WithCancel(t.Context())
	a := ds.Subscribe(ctx, "a", 100)
	full := ds.Subscribe(ctx, "a", 1)
	b := ds.Subscribe(ctx, "b", 100)
	for i := range 50 {
		ds.Publish(feed.Delta{SessionID: "a", Delta: model.Delta{Text: fmt.Sprint(i)}}) // full never reads: must not block
	}
	ds.Publish(feed.Delta{SessionID: "b", Delta: model.Delta{Text: "only b"}})
	for i := range 50 {
		if d := <-a; d.Text != fmt.Sprint(i) {
			t.Fatalf("delta %d: got %q", i, d.Text)
		}
	}
	if d := <-b; d.Text != "only b" {
		t.Fatalf("session b got %q", d.Text)
	}
	if d := <-full; d.Text != "0" {
		t.Fatalf("full reader: got %q, want the first delta", d.Text)
	}
	cancel()
	for range a {
	}
	for range full {
	}
	ds.Publish(feed.Delta{SessionID: "a", Delta: model.Delta{Text: "after"}}) // no readers left: dropped
}
