package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

// RenewAll never waits for one lease row while holding others. An append
// in flight holds its session's lease row (FOR SHARE) until it commits; a
// renewal that locked rows one after another could hold r2 while waiting
// for r1, as the append, holding r1, asks for r2: a deadlock PostgreSQL
// breaks by failing one of them — appends of running sessions.
func TestRenewAllWaitsForNoRowWhileHoldingOthers(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	url := pgtest.URL(t)
	st := open(t, url)
	defer st.Close()
	const ttl = time.Minute
	r1, err := st.Acquire(ctx, "r1", "A", ttl)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := st.Acquire(ctx, "r2", "A", ttl)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM leases WHERE session_id = 'r1' FOR SHARE`); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		got []store.Lease
		err error
	}
	renewed := make(chan outcome, 1)
	go func() {
		got, err := st.RenewAll(ctx, []store.Lease{r2, r1}, ttl)
		renewed <- outcome{got, err}
	}()
	// Until the renewal waits for r1.
	for {
		var waiting int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case o := <-renewed:
			t.Fatalf("RenewAll returned (%+v, %v) while r1 was locked", o.got, o.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The append's next row: free, or the renewal gives it up at once.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM leases WHERE session_id = 'r2' FOR SHARE`); err != nil {
		t.Fatalf("the transaction holding r1 could not lock r2: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-renewed
	if o.err != nil || len(o.got) != 2 || o.got[0].SessionID != "r2" || o.got[1].SessionID != "r1" {
		t.Fatalf("RenewAll: %+v %v, want r2 and r1 renewed", o.got, o.err)
	}
}
