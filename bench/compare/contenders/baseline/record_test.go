package main

import (
	"context"
	"database/sql"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/bench/compare/fake"
	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// orderedRecorder records through recorder and notes, for each call, how
// many tool calls of its session had run when it was recorded.
type orderedRecorder struct {
	recorder
	session *workload.Session
	seen    []int
}

func (o *orderedRecorder) Record(ctx context.Context, session string, call int, id, args string) error {
	o.seen = append(o.seen, o.session.Calls())
	return o.recorder.Record(ctx, session, call, id, args)
}

// runRecorded runs three sessions recording through rec and checks that
// each call was recorded before it ran or, atEnd, that each session was
// recorded once, after its last call.
func runRecorded(t *testing.T, rec recorder, atEnd bool) {
	t.Helper()
	srv := httptest.NewServer(fake.New(0))
	defer srv.Close()
	o := &orderedRecorder{recorder: rec}
	rt, err := newRuntime(t.Context(), harness.Env{BaseURL: srv.URL + "/v1", HTTPClient: harness.NewHTTPClient(10), Dir: t.TempDir()}, durable{rec: o, atEnd: atEnd})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		ctx, s := workload.WithSession(t.Context())
		o.session, o.seen = s, nil
		final, err := rt.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := workload.Check(s, final); err != nil {
			t.Fatal(err)
		}
		if atEnd {
			if len(o.seen) != 1 || o.seen[0] != workload.K {
				t.Fatalf("recorded after %v calls, want once after all %d", o.seen, workload.K)
			}
			continue
		}
		if len(o.seen) != workload.K {
			t.Fatalf("recorded %d calls, want %d", len(o.seen), workload.K)
		}
		for i, ran := range o.seen {
			if ran != i {
				t.Fatalf("call %d was recorded after %d calls had run, want %d: a call must be durable before it runs", i+1, ran, i)
			}
		}
	}
}

func TestSQLiteFloorCommitsEachCallBeforeItRuns(t *testing.T) {
	dir := t.TempDir()
	rec, err := newRecorder(t.Context(), "sqlite", dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close() // again: closing twice is harmless
	runRecorded(t, rec, false)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "calls.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, sessions int
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT session) FROM calls`).Scan(&n, &sessions); err != nil {
		t.Fatal(err)
	}
	if n != 3*workload.K || sessions != 3 {
		t.Fatalf("the database holds %d calls of %d sessions, want %d of 3", n, sessions, 3*workload.K)
	}
}

func TestPostgresFloorCommitsEachCallBeforeItRuns(t *testing.T) {
	rec, err := newRecorder(t.Context(), "postgres", "", pgtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rec.Close(); err != nil {
			t.Error(err)
		}
	}()
	runRecorded(t, rec, false)
	var n int
	pool := rec.(*postgresRecorder).pool
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM calls`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3*workload.K {
		t.Fatalf("the database holds %d calls, want %d", n, 3*workload.K)
	}
}

func TestUnknownCommitKindIsRefused(t *testing.T) {
	if _, err := newRecorder(t.Context(), "mysql", t.TempDir(), ""); err == nil {
		t.Fatal("-commit mysql was taken")
	}
}

func TestSQLiteEndFloorCommitsEachSessionOnceAtItsEnd(t *testing.T) {
	rec, err := newRecorder(t.Context(), "sqlite", t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	runRecorded(t, rec, true)
	var n int
	if err := rec.(*sqliteRecorder).db.QueryRow(`SELECT count(*) FROM calls WHERE call_id = 'end'`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d ends recorded (%v), want 3", n, err)
	}
}
