package postgres

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A schema 1 database's forks (recorded before the summary had the
// column) are found by their origin once migrated (schema 2 and on).
func TestMigrationFindsForksRecordedBefore(t *testing.T) {
	ctx := t.Context()
	url, pool := atSchema(t, 1)
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	for i, s := range []struct {
		id, tenant string
		from       *loop.ForkedFrom
	}{{"orig", "", nil}, {"fork-a", "", &loop.ForkedFrom{ID: "orig", Iteration: 5}}, {"fork-b", "acme", &loop.ForkedFrom{ID: "orig", Iteration: 2}}} {
		e := loop.NewEvent(s.id, 1, now.Add(time.Duration(i)*time.Second), &loop.SessionStarted{Task: s.id, Tenant: s.tenant, ForkedFrom: s.from})
		data, err := e.EncodeData()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO sessions (id, tenant, task, model, status, reason, iteration, max_iterations, tokens, cost_usd, created_at, updated_at, last_seq, workspace, labels)
VALUES ($1, $2, $1, '', 'running', '', 0, 0, 0, 0, $3, $3, 1, '', '{}')`, s.id, s.tenant, e.Time); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO events (tenant, session_id, seq, type, version, time, data) VALUES ($1, $2, 1, $3, $4, $5, $6::json)`,
			s.tenant, s.id, string(e.Type), e.Version, e.Time, string(data)); err != nil {
			t.Fatal(err)
		}
	}
	st := migrated(t, url, pool)
	forks, err := st.List(ctx, store.Filter{ForkedFrom: "orig"})
	if err != nil {
		t.Fatal(err)
	}
	if len(forks) != 2 || forks[0].ID != "fork-b" || *forks[0].ForkedFrom != (loop.ForkedFrom{ID: "orig", Iteration: 2}) ||
		forks[1].ID != "fork-a" || *forks[1].ForkedFrom != (loop.ForkedFrom{ID: "orig", Iteration: 5}) {
		t.Fatalf("forks of orig after migrating: %+v", forks)
	}
	if all, _ := st.List(ctx, store.Filter{Tenant: ""}); len(all) != 3 {
		t.Fatalf("%d sessions after migrating", len(all))
	}
}

// atSchema returns the URL of a new database at schema version v (its
// first v migrations applied) and a pool on it, for a test to fill before
// it opens a Store that migrates the rest.
func atSchema(t *testing.T, v int) (string, *pgxpool.Pool) {
	t.Helper()
	url := pgtest.URL(t)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	steps := append(slices.Clone(migrations[:v]), `CREATE TABLE agentloop_schema (version INTEGER NOT NULL)`, fmt.Sprintf(`INSERT INTO agentloop_schema (version) VALUES (%d)`, v))
	for _, q := range steps {
		if _, err := pool.Exec(t.Context(), q); err != nil {
			pool.Close()
			t.Fatal(err)
		}
	}
	return url, pool
}

// migrated lets pool go and opens a Store on url, which migrates the
// database to the current schema; the test closes it.
func migrated(t *testing.T, url string, pool *pgxpool.Pool) *Store {
	t.Helper()
	pool.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
