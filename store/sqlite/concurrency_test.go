package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/storetest"
)

// TestManyWritersNeverLocked has 200 sessions append concurrently in small
// batches while other goroutines Load and List: the single writer and the
// read pool must never report "database is locked" (or any other error).
func TestManyWritersNeverLocked(t *testing.T) {
	sessions, perSession := 200, 51
	if testing.Short() {
		sessions = 50
	}
	s := open(t, tempPath(t))
	defer s.Close()
	ctx := t.Context()
	var (
		wg      sync.WaitGroup
		writing atomic.Int32
		mu      sync.Mutex
		errs    []error
	)
	report := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	writing.Store(int32(sessions))
	for i := range sessions {
		id := fmt.Sprintf("w%03d", i)
		wg.Go(func() {
			defer writing.Add(-1)
			log := storetest.FakeEvents(id, 1, int64(perSession))
			rng := rand.New(rand.NewPCG(uint64(i), 0))
			for j := 0; j < len(log); {
				n := min(1+rng.IntN(3), len(log)-j)
				if err := s.Append(ctx, log[j:j+n]...); err != nil {
					report(fmt.Errorf("append %s: %w", id, err))
					return
				}
				j += n
			}
		})
	}
	for r := range 8 {
		wg.Go(func() {
			// A bounded number of reads, so the readers do not starve
			// the writers of CPU (the race detector makes SQLite slow).
			for range 60 {
				if writing.Load() == 0 {
					return
				}
				id := fmt.Sprintf("w%03d", rand.IntN(sessions))
				if _, err := s.Load(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
					report(fmt.Errorf("load %s: %w", id, err))
					return
				}
				if r%2 == 0 {
					if _, err := s.List(ctx, store.Filter{Unfinished: true, Limit: 50}); err != nil {
						report(fmt.Errorf("list: %w", err))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	locked := 0
	for _, err := range errs {
		if strings.Contains(err.Error(), "locked") || strings.Contains(err.Error(), "busy") {
			locked++
		}
		t.Error(err)
	}
	if locked > 0 {
		t.Fatalf("%d errors were lock errors", locked)
	}
	list, err := s.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != sessions {
		t.Fatalf("%d sessions listed, want %d", len(list), sessions)
	}
	for _, sum := range list {
		if sum.LastSeq != int64(perSession) {
			t.Errorf("%s: LastSeq %d, want %d", sum.ID, sum.LastSeq, perSession)
		}
	}
	for _, id := range []string{"w000", fmt.Sprintf("w%03d", sessions-1)} {
		if got := mustLoad(t, s, id); !storetest.EqualEvents(got, storetest.FakeEvents(id, 1, int64(perSession))) {
			t.Errorf("log %s differs", id)
		}
	}
}

// TestCancelledAppends cancels appends at random moments: an Append that
// returns the context's error must have written nothing, one that returns
// nil must have written everything.
func TestCancelledAppends(t *testing.T) {
	s := open(t, tempPath(t))
	defer s.Close()
	const sessions, perSession = 16, 30
	var wg sync.WaitGroup
	var cancelled, written atomic.Int64
	for i := range sessions {
		id := fmt.Sprintf("c%02d", i)
		wg.Go(func() {
			log := storetest.FakeEvents(id, 1, perSession)
			for next := 0; next < len(log); {
				ctx, cancel := context.WithCancel(t.Context())
				go func() {
					for range rand.IntN(50) {
						runtime.Gosched()
					}
					cancel()
				}()
				err := s.Append(ctx, log[next])
				cancel()
				var stored int
				if events, lerr := s.Load(t.Context(), id); lerr == nil {
					stored = len(events)
				} else if !errors.Is(lerr, store.ErrNotFound) {
					t.Error(lerr)
					return
				}
				switch {
				case err == nil:
					written.Add(1)
					if stored != next+1 {
						t.Errorf("%s: Append of %d succeeded but the log has %d events", id, next+1, stored)
						return
					}
					next++
				case errors.Is(err, context.Canceled):
					cancelled.Add(1)
					if stored != next {
						t.Errorf("%s: Append of %d was cancelled but the log has %d events", id, next+1, stored)
						return
					}
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d appends written, %d cancelled", written.Load(), cancelled.Load())
}

// TestCloseFlushes closes the store while appends are in flight: every
// Append that returned nil is stored, every other one failed with
// ErrClosed and is not.
func TestCloseFlushes(t *testing.T) {
	path := tempPath(t)
	s := open(t, path)
	const sessions = 40
	var wg sync.WaitGroup
	lastOK := make([]int64, sessions)
	var acked atomic.Int64
	start := make(chan struct{})
	for i := range sessions {
		id := fmt.Sprintf("f%02d", i)
		wg.Go(func() {
			<-start
			for seq := int64(1); ; seq++ {
				err := s.Append(context.Background(), storetest.FakeEvent(id, seq))
				if errors.Is(err, store.ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				lastOK[i] = seq
				acked.Add(1)
			}
		})
	}
	close(start)
	for acked.Load() < 200 { // close mid-stream, not before the first append
		runtime.Gosched()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s = open(t, path)
	defer s.Close()
	for i := range sessions {
		id := fmt.Sprintf("f%02d", i)
		var stored int64
		if events, err := s.Load(t.Context(), id); err == nil {
			stored = int64(len(events))
		} else if !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if stored != lastOK[i] {
			t.Errorf("%s: %d events acknowledged, %d stored", id, lastOK[i], stored)
		}
	}
}
