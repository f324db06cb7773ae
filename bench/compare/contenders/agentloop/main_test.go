package main

import (
	"net/http/httptest"
	"os"
	"testing"

	"github.com/agentloop/agentloop/bench/compare/fake"
	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestSessions(t *testing.T) {
	srv := httptest.NewServer(fake.New(0))
	defer srv.Close()
	for _, store := range []string{"sqlite", "postgres", "memory"} {
		t.Run(store, func(t *testing.T) {
			pg := ""
			if store == "postgres" {
				pg = pgtest.ServerURL(t)
			}
			rt, err := newRuntime(t.Context(), harness.Env{BaseURL: srv.URL + "/v1", HTTPClient: harness.NewHTTPClient(10), Dir: t.TempDir()}, store, pg)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := harness.Once(t.Context(), rt); err != nil {
					t.Fatal(err)
				}
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			st := rt.Stats()
			if st["events_per_session"] < float64(workload.Iterations) || st["sessions_total"] != 3 {
				t.Fatalf("stats %v", st)
			}
			if store == "sqlite" && st["db_bytes"] == 0 {
				t.Fatalf("stats %v", st)
			}
		})
	}
}

// BenchmarkSession runs whole sessions against the fake model served in
// this process, for a precise per-session CPU and allocation figure to
// compare with the baseline contender's BenchmarkSession:
//
//	go test -run XXX -bench Session -count 6 ./bench/compare/contenders/...
func BenchmarkSession(b *testing.B) {
	srv := httptest.NewServer(fake.New(0))
	defer srv.Close()
	for _, store := range []string{"memory", "sqlite"} {
		b.Run(store, func(b *testing.B) {
			rt, err := newRuntime(b.Context(), harness.Env{BaseURL: srv.URL + "/v1", HTTPClient: harness.NewHTTPClient(10), Dir: b.TempDir()}, store, "")
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := harness.Once(b.Context(), rt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
