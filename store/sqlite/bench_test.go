package sqlite_test

import (
	"fmt"
	"os"
	"testing"

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
