package sqlite_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store/storetest"
)

// BenchmarkAppend: see storetest.BenchAppend. It also reports the size of
// the database file per 1,000 iterations (5,000 events), measured after
// Close has checkpointed the WAL; run with a large -benchtime (e.g. 20000x)
// for that figure to mean anything.
//
//	go test -run '^$' -bench . -benchtime 20000x ./store/sqlite/
func BenchmarkAppend(b *testing.B) {
	for _, sessions := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("%d-sessions", sessions), func(b *testing.B) {
			path := tempPath(b)
			s := open(b, path)
			storetest.BenchAppend(b, s, sessions)
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size())/float64(b.N)*1000/(1<<20), "MiB/1k-iter")
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	s := open(b, tempPath(b))
	defer s.Close()
	storetest.BenchLoad(b, s)
}

// BenchmarkToolCallCommit is the commit a plain (non-idempotent) tool's
// every call waits for: one session under a lease, each iteration handing
// three events to an asynchronous commit (the last call's result and the
// next iteration's start, as the runner commits them behind the model
// call) and then appending two fenced and waiting (the reply and
// tool.started, durable before the tool may run). ns/op is one iteration,
// the waited append's whole latency included.
//
//	go test -run '^$' -bench ToolCallCommit -benchtime 5000x ./store/sqlite/
func BenchmarkToolCallCommit(b *testing.B) {
	s := open(b, tempPath(b))
	defer s.Close()
	ctx := b.Context()
	le, err := s.AppendAcquiring(ctx, "bench", time.Minute, storetest.FakeEvent("tc", 1))
	if err != nil {
		b.Fatal(err)
	}
	evs := storetest.FakeEvents("tc", 2, 1+int64(b.N)*5)
	pending := make(chan error, b.N)
	b.ResetTimer()
	for i := range b.N {
		it := evs[i*5 : i*5+5]
		s.AppendFencedAsync(ctx, le.Token, it[:3], func(err error) { pending <- err })
		if err := s.AppendFenced(ctx, le.Token, it[3:]...); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for range b.N {
		if err := <-pending; err != nil {
			b.Fatal(err)
		}
	}
}
