package bench

import (
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/bench/loopbench"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/store/sqlite"
)

// BenchmarkIteration measures the runtime's overhead per loop iteration
// (scripted model and a trivial tool, so almost all time is the runtime's),
// with an in-memory log and with durable SQLite persistence. Compare the
// two sub-benchmarks: the difference is the price of persisting every event.
func BenchmarkIteration(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) loop.Log
	}{
		{"memory", func(b *testing.B) loop.Log { return memory.New() }},
		{"sqlite", func(b *testing.B) loop.Log {
			st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
	}
	script := loopbench.Script()
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			log := s.open(b)
			b.ReportAllocs()
			b.ResetTimer()
			sessions := 0
			for b.Loop() {
				r, err := loopbench.Runner(scripted.NewCompact(script), log)
				if err != nil {
					b.Fatal(err)
				}
				st, err := r.Run(b.Context(), loop.Task{Prompt: "add the numbers"})
				if err != nil {
					b.Fatal(err)
				}
				if err := loopbench.Check(st); err != nil {
					b.Fatal(err)
				}
				sessions++
			}
			iters := float64(sessions * (loopbench.K + 1))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/iters, "ns/iteration")
		})
	}
}
