package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store/internal/eventbatch"
)

// Once migrated to schema 4, a batch too large to keep uncompressed is
// stored with lz4 on a server that has it (pglz on one that has not), and
// a batch written with pglz before the migration still reads back whole.
func TestMigrationCompressesNewBatchesWithLZ4(t *testing.T) {
	ctx := t.Context()
	url, pool := atSchema(t, 3)
	// A server without lz4 refuses it as a setting too (tried in a
	// transaction rolled back, so the rows below get the server's default).
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, noLZ4 := tx.Exec(ctx, `SET LOCAL default_toast_compression = lz4`)
	tx.Rollback(ctx)
	want := "lz4"
	if noLZ4 != nil {
		t.Logf("this server has no lz4 (%v): batches stay pglz", noLZ4)
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
	if _, err := pool.Exec(ctx, `INSERT INTO sessions (id, tenant, task, model, status, reason, iteration, max_iterations, tokens, cost_usd, created_at, updated_at, last_seq, workspace, labels)
VALUES ('s1', '', 't', '', 'running', '', 1, 0, 0, 0, $1, $1, 1, '', '{}')`, at); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO event_batches (session_id, first_seq, last_seq, events) VALUES ('s1', 1, 1, $1)`, batch); err != nil {
		t.Fatal(err)
	}

	st := migrated(t, url, pool)
	next := loop.NewEvent("s1", 2, at.Add(time.Second), &loop.ToolFinished{Iteration: 2, CallID: "c2", Name: "read", Output: output + "more"})
	if err := st.Append(ctx, next); err != nil {
		t.Fatal(err)
	}
	rows, err := st.pool.Query(ctx, `SELECT last_seq, pg_column_compression(events) FROM event_batches WHERE session_id = 's1' ORDER BY last_seq`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var seq int64
		var method string
		if err := rows.Scan(&seq, &method); err != nil {
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
}
