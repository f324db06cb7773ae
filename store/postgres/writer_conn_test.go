package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

// The writer's connection, the first and one taken after a loss, prices
// out whole-table scans: its statements find rows by key, and plans made
// while a new database's tables were nearly empty must not scan them once
// they have grown.
func TestWriterConnectionFindsRowsByKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := Open(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	show := func() string {
		t.Helper()
		conn, err := st.w.connection(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var v string
		if err := conn.QueryRow(ctx, "SHOW enable_seqscan").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := show(); v != "off" {
		t.Fatalf("enable_seqscan on the writer's connection: %s", v)
	}
	st.w.conn.Conn().Close(ctx) // the connection is lost (no append runs meanwhile)
	if v := show(); v != "off" {
		t.Fatalf("enable_seqscan on the writer's next connection: %s", v)
	}
}
