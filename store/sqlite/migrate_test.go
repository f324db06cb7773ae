package sqlite

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/storetest"
)

// A database written with one row per event (schema 6) opens with every
// event as it was, byte for byte, and its sessions go on from where they
// were.
func TestMigrationToEventBatchesKeepsEveryEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v6.db")
	db := databaseAt(t, path, 6)
	// Payloads with newlines, spaces and a frame-like line in their
	// strings, and a zero time, must survive the reframing.
	odd := loop.NewEvent("b", 2, time.Time{}, &loop.Warning{Message: "line one\n0 1 2 3\nx 1 0 5\n{\"a\":1}\n  end — déjà 日本"})
	want := map[string][]loop.Event{
		"a": storetest.FakeEvents("a", 1, 7),
		"b": append(storetest.FakeEvents("b", 1, 1), odd),
	}
	for id, events := range want {
		if _, err := db.Exec(`INSERT INTO sessions (id, task, model, status, reason, iteration, tokens, cost_usd, created_at, updated_at, last_seq) VALUES (?, 't', 'm', 'running', '', 0, 0, 0, 0, 0, ?)`, id, len(events)); err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			data, err := e.EncodeData()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO events (session_id, seq, type, version, time, data) VALUES (?, ?, ?, ?, ?, ?)`, e.SessionID, e.Seq, string(e.Type), e.Version, encodeTime(e.Time), data); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := openMigrated(t, db, path)
	for id, events := range want {
		got, err := s.Load(t.Context(), id)
		if err != nil {
			t.Fatalf("load %s: %v", id, err)
		}
		if !reflect.DeepEqual(got, roundTrip(t, events)) {
			t.Fatalf("session %s after migrating:\n got %+v\nwant %+v", id, got, events)
		}
		tail, err := s.LoadAfter(t.Context(), id, 1)
		if err != nil || len(tail) != len(events)-1 {
			t.Fatalf("load %s after 1: %d events, %v", id, len(tail), err)
		}
	}
	// A retried append of migrated events is recognised as stored.
	if err := s.Append(t.Context(), want["a"][5:]...); err != nil {
		t.Fatalf("retry of stored events: %v", err)
	}
	next := storetest.FakeEvent("a", 8)
	if err := s.Append(t.Context(), next); err != nil {
		t.Fatalf("append after migrating: %v", err)
	}
	if got, err := s.Load(t.Context(), "a"); err != nil || len(got) != 8 {
		t.Fatalf("after one more append: %d events, %v", len(got), err)
	}
}

// roundTrip is events as a store gives them back: encoded and decoded.
func roundTrip(t *testing.T, events []loop.Event) []loop.Event {
	t.Helper()
	out := make([]loop.Event, len(events))
	for i, e := range events {
		data, err := e.EncodeData()
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = loop.DecodeEvent(e.SessionID, e.Seq, e.Type, e.Version, e.Time, data); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// A schema 7 database's tenant and workspace indexes become partial
// (schema 8) and still find every session that has one.
func TestMigrationToPartialIndexesKeepsListing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v7.db")
	db := databaseAt(t, path, 7)
	for i, tw := range [][2]string{{"", ""}, {"acme", ""}, {"acme", "/w/a"}, {"", "/w/a"}, {"other", "/w/b"}} {
		if _, err := db.Exec(`INSERT INTO sessions (id, task, model, status, reason, iteration, tokens, cost_usd, created_at, updated_at, last_seq, tenant, workspace) VALUES (?, 't', 'm', 'running', '', 0, 0, 0, ?, 0, 0, ?, ?)`,
			fmt.Sprintf("s%d", i), i, tw[0], tw[1]); err != nil {
			t.Fatal(err)
		}
	}
	s := openMigrated(t, db, path)
	ids := func(f store.Filter) []string {
		sums, err := s.List(t.Context(), f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, sum := range sums {
			out = append(out, sum.ID)
		}
		return out
	}
	for _, c := range []struct {
		f    store.Filter
		want []string
	}{
		{store.Filter{Tenant: "acme"}, []string{"s2", "s1"}},
		{store.Filter{Workspace: "/w/a"}, []string{"s3", "s2"}},
		{store.Filter{Tenant: "acme", Workspace: "/w/a"}, []string{"s2"}},
		{store.Filter{}, []string{"s4", "s3", "s2", "s1", "s0"}},
	} {
		if got := ids(c.f); !reflect.DeepEqual(got, c.want) {
			t.Errorf("list %+v: %v, want %v", c.f, got, c.want)
		}
	}
	var partial int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('sessions_tenant_newest', 'sessions_workspace') AND sql LIKE '%WHERE%'`).Scan(&partial); err != nil || partial != 2 {
		t.Fatalf("partial indexes after migrating: %d, %v", partial, err)
	}
}

// databaseAt makes a database at path with the schema of the given
// version, as a build of that time left it, for a migration to take up.
func databaseAt(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn(path, options{busyTimeout: time.Second}, false))
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range migrations[:version] {
		if _, err := db.Exec(m); err != nil {
			t.Fatalf("migration %d: %v", i+1, err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", version)); err != nil {
		t.Fatal(err)
	}
	return db
}

// openMigrated closes the old build's db and opens the store on its file,
// which migrates it, closing it when the test ends.
func openMigrated(t *testing.T, db *sql.DB, path string) *Store {
	t.Helper()
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("open after the old build: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A schema 9 database loses its tombstones of deleted sessions (schema
// 10) and keeps its sessions.
func TestMigrationDropsDeletedSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v9.db")
	db := databaseAt(t, path, 9)
	if _, err := db.Exec(`INSERT INTO sessions (id, task, model, status, reason, iteration, tokens, cost_usd, created_at, updated_at, last_seq) VALUES ('kept', 't', 'm', 'running', '', 0, 0, 0, 1, 1, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO deleted_sessions (id, created_at) VALUES ('gone', 1)`); err != nil {
		t.Fatal(err)
	}
	s := openMigrated(t, db, path)
	var n int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'deleted_sessions'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("deleted_sessions after migrating: %d, %v", n, err)
	}
	if sums, err := s.List(t.Context(), store.Filter{}); err != nil || len(sums) != 1 || sums[0].ID != "kept" {
		t.Fatalf("sessions after migrating: %+v, %v", sums, err)
	}
}

// A session-end journal an earlier build left beside the database: one
// that holds events makes Open refuse, saying what to do, and leaves the
// database at its schema for that build; one that holds nothing, and a
// journal's temporary file, are removed.
func TestOpenRefusesAnEarlierBuildsEndJournal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.db")
	databaseAt(t, path, 9).Close()
	held := path + "-ends-123-abc"
	empty := path + "-ends-456-def"
	tmp := path + ".ends-tmp-789-ghi"
	other := filepath.Join(dir, "other.db-ends-1-x") // another database's
	for p, content := range map[string]string{held: oldJournalHeader + "\x10\x00\x00\x00some record", empty: oldJournalHeader, tmp: oldJournalHeader, other: oldJournalHeader + "x"} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), held) || !strings.Contains(err.Error(), "open it once with that build") || !strings.Contains(err.Error(), "move the file away") {
		t.Fatalf("open beside a journal holding events: %v", err)
	}
	db, err := sql.Open(driverName, path)
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 9 {
		t.Fatalf("schema after the refusal: %d, %v; want 9, for the build that commits the journal", v, err)
	}
	db.Close()
	for p, want := range map[string]bool{held: true, empty: false, tmp: false, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
	if err := os.Rename(held, filepath.Join(dir, "moved-away")); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatalf("open with the journal moved away: %v", err)
	}
	s.Close()
}
