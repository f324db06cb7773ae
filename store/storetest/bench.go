package storetest

import (
	"fmt"
	"math/bits"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// BenchAppend appends b.N synthetic iterations (five events each, see
// FakeEvent) spread over the given number of sessions, one goroutine per
// session, each event in its own Append as a runner writes them. It reports
// events/s, the p50 and p99 latency of one Append, and the process's CPU
// time per event. Sessions are created
// (event 1) before the timer starts.
func BenchAppend(b *testing.B, s store.Store, sessions int) {
	ctx := b.Context()
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%04d", i)
		if err := s.Append(ctx, FakeEvent(ids[i], 1)); err != nil {
			b.Fatal(err)
		}
	}
	// Build the events before timing: this measures the store.
	work := make([][]loop.Event, sessions)
	for g := range sessions {
		iters := b.N / sessions
		if g < b.N%sessions {
			iters++
		}
		work[g] = FakeEvents(ids[g], 2, 1+int64(iters)*5)
	}
	hists := make([]histogram, sessions)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for g := range sessions {
		wg.Go(func() {
			h := &hists[g]
			for _, e := range work[g] {
				t0 := time.Now()
				if err := s.Append(ctx, e); err != nil {
					errs <- err
					return
				}
				h.add(time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var all histogram
	for i := range hists {
		all.merge(&hists[i])
	}
	b.ReportMetric(float64(b.N*5)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(all.quantile(0.50))/1e3, "p50-µs")
	b.ReportMetric(float64(all.quantile(0.99))/1e3, "p99-µs")
	if cpu > 0 {
		// CPU time is steadier than wall time on a busy machine.
		b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N*5), "cpu-µs/event")
	}
}

// BenchLoad measures loading a session of 100 synthetic iterations (501
// events) and reports the time per event. The session was written
// interleaved with nine others, as a busy server would write it.
func BenchLoad(b *testing.B, s store.Store) {
	ctx := b.Context()
	const last = 501
	for seq := int64(1); seq <= last; seq++ {
		for i := range 10 {
			if err := s.Append(ctx, FakeEvent(fmt.Sprintf("bench-load-%d", i), seq)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		got, err := s.Load(ctx, "bench-load-0")
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != last {
			b.Fatalf("loaded %d events, want %d", len(got), last)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*last), "ns/event")
}

// histogram counts durations in log-linear buckets: 16 per power of two,
// so a quantile is accurate to about 6%.
type histogram struct {
	counts [64 * 16]uint64
	n      uint64
}

func (h *histogram) add(d time.Duration) {
	h.counts[bucket(uint64(max(d, 1)))]++
	h.n++
}

func bucket(v uint64) int {
	e := bits.Len64(v) - 1 // v in [2^e, 2^(e+1))
	if e < 4 {
		return int(v) // exact for small values
	}
	sub := (v >> (e - 4)) & 15
	return e*16 + int(sub)
}

// lower returns the smallest value of bucket i.
func lower(i int) uint64 {
	e, sub := i/16, uint64(i%16)
	if e < 4 {
		return uint64(i)
	}
	return (1 << e) | sub<<(e-4)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

func (h *histogram) quantile(q float64) uint64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n-1)) + 1
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return lower(i)
		}
	}
	return 0
}
