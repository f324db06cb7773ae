package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store/internal/eventbatch"
)

// Opening a database has a server built with lz4 store the log's new
// batches with it; a batch stored with pglz before still reads back
// whole, and the schema version is unchanged (older builds share the
// database as before). A server without lz4 keeps pglz.
func TestOpenCompressesNewBatchesWithLZ4(t *testing.T) {
	ctx := t.Context()
	url, pool := atSchema(t, SchemaVersion)
	var version int
	if err := pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 140000 {
		t.Skipf("PostgreSQL %d has one compression method", version)
	}
	var can bool
	if err := pool.QueryRow(ctx, `SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&can); err != nil {
		t.Fatal(err)
	}
	want := "lz4"
	if !can {
		t.Log("this server has no lz4: batches stay pglz")
		want = "pglz"
	}
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	output := strings.Repeat("func main() { fmt.Println(\"a tool's output, read back whole\") }\n", 1024) // 66 KiB
	old := loop.NewEvent("s1", 1, at, &loop.ToolFinished{Iteration: 1, CallID: "c1", Name: "read", Output: output})
	payload, err := old.EncodeData()
	if err != nil {
		t.Fatal(err)
	}
	batch := eventbatch.AppendFrame(nil, string(old.Type), old.Version, eventbatch.UnixNano(old.Time), payload)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, q := range []string{
		// pglz whatever the server's default (lz4 from PostgreSQL 19 on).
		`SET LOCAL default_toast_compression = pglz`,
		`INSERT INTO sessions (id, tenant, task, model, status, reason, iteration, max_iterations, tokens, cost_usd, created_at, updated_at, last_seq, workspace, labels)
VALUES ('s1', '', 't', '', 'running', '', 1, 0, 0, 0, now(), now(), 1, '', '{}')`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO event_batches (session_id, first_seq, last_seq, events) VALUES ('s1', 1, 1, $1)`, batch); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	st := migrated(t, url, pool)
	next := loop.NewEvent("s1", 2, at.Add(time.Second), &loop.ToolFinished{Iteration: 2, CallID: "c2", Name: "read", Output: output + "more"})
	if err := st.Append(ctx, next); err != nil {
		t.Fatal(err)
	}
	rows, err := st.pool.Query(ctx, `SELECT pg_column_compression(events) FROM event_batches WHERE session_id = 's1' ORDER BY last_seq`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var method string
		if err := rows.Scan(&method); err != nil {
			t.Fatal(err)
		}
		got = append(got, method)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "pglz" || got[1] != want {
		t.Fatalf("batches compressed with %q, want [pglz %s]", got, want)
	}
	events, err := st.Load(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Data.(*loop.ToolFinished).Output != output || events[1].Data.(*loop.ToolFinished).Output != output+"more" {
		t.Fatalf("outputs did not read back whole: %d events", len(events))
	}
	var v int
	if err := st.pool.QueryRow(ctx, `SELECT version FROM agentloop_schema`).Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("schema version %d (%v), want %d", v, err, SchemaVersion)
	}
}
