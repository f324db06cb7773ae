package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// testLoadAfter: LoadAfter returns exactly the events after a sequence
// number, an empty slice past the end, and ErrNotFound for no session.
func (s Suite) testLoadAfter(t *testing.T) {
	st := s.open(t)
	all := FakeEvents("la", 1, 12)
	mustAppend(t, st, all...)
	for _, after := range []int64{0, 1, 5, 11, 12, 40} {
		got, err := st.LoadAfter(t.Context(), "la", after)
		if err != nil {
			t.Fatalf("LoadAfter(la, %d): %v", after, err)
		}
		want := all[min(after, int64(len(all))):]
		if got == nil || !EqualEvents(got, want) {
			t.Fatalf("LoadAfter(la, %d) = %d events (nil: %v), want events %d..12", after, len(got), got == nil, after+1)
		}
	}
	if _, err := st.LoadAfter(t.Context(), "nobody", 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoadAfter of a missing session: err = %v, want ErrNotFound", err)
	}
}

// testWatchOrder: every commit is announced once per session, in order,
// with the events it made durable, while other sessions append concurrently.
func (s Suite) testWatchOrder(t *testing.T) {
	st := s.open(t)
	var (
		mu   sync.Mutex
		seen = map[string][]loop.Event{}
		last = map[string]int64{}
		bad  error
	)
	stop := st.Watch(func(n store.Notice) {
		mu.Lock()
		defer mu.Unlock()
		if n.Seq <= last[n.SessionID] && bad == nil {
			bad = fmt.Errorf("session %s: notice for seq %d after %d", n.SessionID, n.Seq, last[n.SessionID])
		}
		last[n.SessionID] = n.Seq
		seen[n.SessionID] = append(seen[n.SessionID], n.Events...)
	})
	const sessions, perSession = 4, 60
	var wg sync.WaitGroup
	for i := range sessions {
		id := fmt.Sprintf("w%d", i)
		wg.Go(func() {
			for seq := int64(1); seq <= perSession; seq += 3 {
				if err := st.Append(t.Context(), FakeEvents(id, seq, seq+2)...); err != nil {
					t.Errorf("Append(%s, %d): %v", id, seq, err)
					return
				}
			}
		})
	}
	wg.Wait()
	stop()
	mustAppend(t, st, FakeEvents("w0", perSession+1, perSession+1)...) // not seen: stopped
	mu.Lock()
	defer mu.Unlock()
	if bad != nil {
		t.Fatal(bad)
	}
	for i := range sessions {
		id := fmt.Sprintf("w%d", i)
		if last[id] != perSession {
			t.Errorf("session %s: last notice for seq %d, want %d", id, last[id], perSession)
		}
		requireEvents(t, seen[id], FakeEvents(id, 1, perSession))
	}
}

// testResumeAfterSeq: a reader that remembers the last sequence number it
// saw (from a notice) and resumes with LoadAfter sees every event exactly
// once, whatever the notices it was told about.
func (s Suite) testResumeAfterSeq(t *testing.T) {
	st := s.open(t)
	notices := make(chan int64, 1000)
	stop := st.Watch(func(n store.Notice) {
		if n.SessionID == "rs" {
			select {
			case notices <- n.Seq:
			default:
			}
		}
	})
	defer stop()
	var got []loop.Event
	var last int64
	for seq := int64(1); seq <= 30; seq += 2 {
		mustAppend(t, st, FakeEvents("rs", seq, seq+1)...)
		if n := <-notices; n != seq+1 {
			t.Fatalf("notice for seq %d, want %d", n, seq+1)
		}
		if seq%6 != 1 {
			continue // read only every third commit: the rest is caught up
		}
		more, err := st.LoadAfter(t.Context(), "rs", last)
		if err != nil {
			t.Fatalf("LoadAfter(rs, %d): %v", last, err)
		}
		got = append(got, more...)
		last = got[len(got)-1].Seq
	}
	more, err := st.LoadAfter(t.Context(), "rs", last)
	if err != nil {
		t.Fatalf("LoadAfter(rs, %d): %v", last, err)
	}
	requireEvents(t, append(got, more...), FakeEvents("rs", 1, 30))
}
