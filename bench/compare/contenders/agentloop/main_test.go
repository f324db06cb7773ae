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
	events := map[string]float64{}
	for _, c := range []struct {
		store     string
		endBehind bool
	}{{"sqlite", false}, {"postgres", false}, {"memory", false}, {"postgres", true}} {
		name := c.store
		if c.endBehind {
			name += "-endbehind"
		}
		t.Run(name, func(t *testing.T) {
			pg := ""
			if c.store == "postgres" {
				pg = pgtest.ServerURL(t)
			}
			rt, err := newRuntime(t.Context(), harness.Env{BaseURL: srv.URL + "/v1", HTTPClient: harness.NewHTTPClient(10), Dir: t.TempDir()}, c.store, pg, c.endBehind)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := harness.Once(t.Context(), rt); err != nil {
					t.Fatal(err)
				}
			}
			if err := rt.Settle(); err != nil {
				t.Fatal(err)
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			st := rt.Stats()
			if st["events_per_session"] < float64(workload.Iterations) || st["sessions_total"] != 3 {
				t.Fatalf("stats %v", st)
			}
			if c.store == "sqlite" && st["db_bytes"] == 0 {
				t.Fatalf("stats %v", st)
			}
			events[name] = st["events_per_session"]
		})
	}
	// A session whose end committed behind its return is stored whole once
	// settled: as many events as one whose end was awaited (and SQLite's,
	// journaled and committed behind, as many as the memory store's).
	if events["postgres-endbehind"] != events["postgres"] || events["sqlite"] != events["memory"] {
		t.Fatalf("events per session: %v", events)
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
			rt, err := newRuntime(b.Context(), harness.Env{BaseURL: srv.URL + "/v1", HTTPClient: harness.NewHTTPClient(10), Dir: b.TempDir()}, store, "", false)
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
