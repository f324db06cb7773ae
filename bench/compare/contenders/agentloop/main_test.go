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
	for _, o := range []options{
		{store: "sqlite", via: "runner"}, {store: "postgres", via: "runner"}, {store: "memory", via: "runner"},
		{store: "postgres", via: "runner", endBehind: true}, {store: "sqlite", via: "service"},
		{store: "sqlite", via: "service", tool: "plain"}, {store: "postgres", via: "service"}, {store: "postgres", via: "service", tool: "plain"},
	} {
		name := o.via + "-" + o.store
		if o.endBehind {
			name += "-endbehind"
		}
		if o.tool == "plain" {
			name += "-plain"
		}
		t.Run(name, func(t *testing.T) {
			if o.store == "postgres" {
				o.pg = pgtest.ServerURL(t)
			}
			rt, err := newRuntime(t.Context(), harness.Env{BaseURL: srv.URL + "/v1", HTTPClient: harness.NewHTTPClient(10), Dir: t.TempDir()}, o)
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
			if o.store == "sqlite" && st["db_bytes"] == 0 {
				t.Fatalf("stats %v", st)
			}
			events[name] = st["events_per_session"]
		})
	}
	// A session whose end committed behind its return is stored whole once
	// settled: as many events as one whose end was awaited; every store and
	// either way in holds the same session.
	if events["runner-postgres-endbehind"] != events["runner-postgres"] || events["runner-sqlite"] != events["runner-memory"] || events["service-sqlite"] != events["runner-sqlite"] ||
		events["service-sqlite-plain"] != events["runner-sqlite"] || events["service-postgres"] != events["runner-sqlite"] || events["service-postgres-plain"] != events["runner-sqlite"] {
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
	for _, o := range []options{{store: "memory", via: "runner"}, {store: "sqlite", via: "runner"}, {store: "sqlite", via: "service"}} {
		b.Run(o.via+"-"+o.store, func(b *testing.B) {
			rt, err := newRuntime(b.Context(), harness.Env{BaseURL: srv.URL + "/v1", HTTPClient: harness.NewHTTPClient(10), Dir: b.TempDir()}, o)
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
