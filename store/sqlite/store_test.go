package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/store/storetest"
)

func open(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tempPath(t testing.TB) string { return filepath.Join(t.TempDir(), "agentloop.db") }

func TestConformance(t *testing.T) {
	storetest.Suite{
		Open: func(t *testing.T) store.Store { return open(t, tempPath(t)) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			path := s.(*sqlite.Store).Path()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, path)
		},
		OpenWithClock: func(t *testing.T, now func() time.Time) store.Store {
			return open(t, tempPath(t), sqlite.WithClock(now))
		},
	}.Run(t)
}

// Two processes on one database file see one set of leases: after the
// first holder's lease expires and the second takes it, the first can
// append nothing more.
func TestLeaseFencesAcrossConnections(t *testing.T) {
	clock := storetest.NewClock()
	path := tempPath(t)
	a := open(t, path, sqlite.WithClock(clock.Now))
	defer a.Close()
	b := open(t, path, sqlite.WithClock(clock.Now))
	defer b.Close()
	ctx := t.Context()
	la, err := a.Acquire(ctx, "x", "A", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "x", "B", time.Second); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("B acquired a live lease held by A: %v", err)
	}
	if err := a.AppendFenced(ctx, la.Token, loop.NewEvent("x", 1, clock.Now(), &loop.SessionStarted{Task: "t"})); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	lb, err := b.Acquire(ctx, "x", "B", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AppendFenced(ctx, la.Token, loop.NewEvent("x", 2, clock.Now(), &loop.IterationStarted{N: 1})); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("A appended after B took the lease: %v", err)
	}
	if err := b.AppendFenced(ctx, lb.Token, loop.NewEvent("x", 2, clock.Now(), &loop.IterationStarted{N: 1})); err != nil {
		t.Fatal(err)
	}
	c, err := b.RequestControl(ctx, store.Control{SessionID: "x", Kind: store.ControlPause})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.ControlsAfter(ctx, 0); err != nil || len(got) != 1 || got[0].ID != c.ID {
		t.Fatalf("A does not see B's control: %+v %v", got, err)
	}
}

func TestOpenRefusesNonFiles(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file::memory:?cache=shared"} {
		if s, err := sqlite.Open(path); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", path)
		}
	}
	if _, err := sqlite.Open(filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

func TestOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%20d.db")
	s := open(t, path)
	mustAppend(t, s, storetest.FakeEvent("x", 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at %q: %v", path, err)
	}
	s = open(t, path)
	defer s.Close()
	if got := mustLoad(t, s, "x"); len(got) != 1 {
		t.Fatalf("loaded %d events", len(got))
	}
}

func mustAppend(t testing.TB, s *sqlite.Store, events ...loop.Event) {
	t.Helper()
	if err := s.Append(context.Background(), events...); err != nil {
		t.Fatal(err)
	}
}

func mustLoad(t testing.TB, s *sqlite.Store, id string) []loop.Event {
	t.Helper()
	events, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// rawDB opens the database file directly, as another program would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open(sqlite.DriverName, "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestNewerSchemaRefused(t *testing.T) {
	path := tempPath(t)
	s := open(t, path)
	mustAppend(t, s, storetest.FakeEvent("x", 1))
	s.Close()
	db := rawDB(t, path)
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := sqlite.Open(path)
	if !errors.Is(err, sqlite.ErrNewerSchema) {
		t.Fatalf("got %v, want ErrNewerSchema", err)
	}
	if !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), "upgrade") {
		t.Errorf("error does not say what to do: %v", err)
	}
}

func TestSchemaVersionRecorded(t *testing.T) {
	path := tempPath(t)
	open(t, path).Close()
	var v int
	if err := rawDB(t, path).QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != sqlite.SchemaVersion {
		t.Fatalf("user_version %d, want %d", v, sqlite.SchemaVersion)
	}
	open(t, path).Close() // reopening an up-to-date file is a no-op
}

// TestUnknownEventsFailLoudly writes rows a newer agentloop could write and
// checks Load refuses them instead of half-parsing.
func TestUnknownEventsFailLoudly(t *testing.T) {
	tests := []struct {
		name    string
		typ     string
		version int
		want    error
	}{
		{"future version", string(loop.TypeToolFinished), 99, loop.ErrFutureVersion},
		{"unknown type", "tool.teleported", 1, loop.ErrUnknownEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t)
			s := open(t, path)
			mustAppend(t, s, storetest.FakeEvents("x", 1, 3)...)
			s.Close()
			db := rawDB(t, path)
			if _, err := db.Exec(`INSERT INTO event_batches (session_id, first_seq, last_seq, events) VALUES ('x', 4, 4, CAST(? AS BLOB))`, fmt.Sprintf("%s %d 0 15\n{\"new_field\":1}\n", tt.typ, tt.version)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`UPDATE sessions SET last_seq = 4 WHERE id = 'x'`); err != nil {
				t.Fatal(err)
			}
			db.Close()
			s = open(t, path)
			defer s.Close()
			_, err := s.Load(t.Context(), "x")
			if !errors.Is(err, tt.want) {
				t.Fatalf("Load: got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestTwoStoresOneFile has two stores (as two processes would) append to
// the same file, so each store's cache of log ends goes stale.
func TestTwoStoresOneFile(t *testing.T) {
	path := tempPath(t)
	s1, s2 := open(t, path), open(t, path)
	defer s1.Close()
	defer s2.Close()
	a := storetest.FakeEvents("a", 1, 8)
	b := storetest.FakeEvents("b", 1, 2)
	mustAppend(t, s1, a[:3]...)
	mustAppend(t, s2, a[3]) // s2 reads the end from the file
	// s1's cache says the log ends at 3.
	if err := s1.Append(t.Context(), a[3]); !errors.Is(err, store.ErrSeqConflict) {
		t.Fatalf("stale duplicate: got %v, want ErrSeqConflict", err)
	}
	mustAppend(t, s1, a[4]) // s1 re-read the end
	mustAppend(t, s2, a[5])
	// Several sessions in one append: b is new, a is stale in s1.
	if err := s1.Append(t.Context(), b[0], a[5]); !errors.Is(err, store.ErrSeqConflict) {
		t.Fatalf("stale multi-session append: got %v, want ErrSeqConflict", err)
	}
	if _, err := s2.Load(t.Context(), "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("session b after refused append: %v", err)
	}
	mustAppend(t, s1, b[0], a[6])
	mustAppend(t, s2, a[7], b[1])
	for _, s := range []*sqlite.Store{s1, s2} {
		if got := mustLoad(t, s, "a"); !storetest.EqualEvents(got, a) {
			t.Fatalf("log a differs")
		}
		if got := mustLoad(t, s, "b"); !storetest.EqualEvents(got, b) {
			t.Fatalf("log b differs")
		}
	}
	list, err := s1.List(t.Context(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range list {
		if want := map[string]int64{"a": 8, "b": 2}[sum.ID]; sum.LastSeq != want {
			t.Errorf("%s: LastSeq %d, want %d", sum.ID, sum.LastSeq, want)
		}
	}
}

func TestAppendAsync(t *testing.T) {
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var _ loop.AsyncLog = s
	evs := storetest.FakeEvents("async", 1, 6)
	done := make(chan error, 1)
	notify := func(err error) { done <- err }
	s.AppendAsync(t.Context(), evs[:3], notify)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.AppendAsync(t.Context(), evs[3:], notify)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A retry of stored events succeeds; another event at a stored seq
	// conflicts, reported to done.
	s.AppendAsync(t.Context(), evs[3:], notify)
	if err := <-done; err != nil {
		t.Fatalf("retry: %v", err)
	}
	other := evs[5]
	other.Time = other.Time.Add(time.Second)
	s.AppendAsync(t.Context(), []loop.Event{other}, notify)
	if err := <-done; !errors.Is(err, loop.ErrSeqConflict) {
		t.Fatalf("another event at seq 6: %v", err)
	}
	got, err := s.Load(t.Context(), "async")
	if err != nil || len(got) != 6 {
		t.Fatalf("%v %d", err, len(got))
	}
}

// A transaction that fails (here a trigger aborts an insert) fails every
// append in it, writes none of them, and leaves the writer's cache of log
// ends correct: once the cause is gone, the same appends succeed.
func TestFailedTransactionFailsItsAppendsAndRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		if err := s.Append(ctx, storetest.FakeEvents(id, 1, 2)...); err != nil {
			t.Fatal(err)
		}
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `CREATE TRIGGER boom BEFORE INSERT ON event_batches WHEN NEW.first_seq = 3 BEGIN SELECT RAISE(ABORT, 'boom'); END`); err != nil {
		t.Fatal(err)
	}
	// One append per session, and one spanning both (a savepoint).
	if err := s.Append(ctx, storetest.FakeEvents("a", 3, 4)...); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("append a: %v", err)
	}
	both := append(storetest.FakeEvents("b", 3, 3), storetest.FakeEvents("a", 3, 3)...)
	if err := s.Append(ctx, both...); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("append a+b: %v", err)
	}
	for _, id := range []string{"a", "b"} {
		evs, err := s.Load(ctx, id)
		if err != nil || len(evs) != 2 {
			t.Fatalf("%s: %v, %d events after failed appends", id, err, len(evs))
		}
	}
	if _, err := other.ExecContext(ctx, `DROP TRIGGER boom`); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, both...); err != nil {
		t.Fatalf("after the cause is gone: %v", err)
	}
	if err := s.Append(ctx, storetest.FakeEvents("a", 4, 4)...); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.Load(ctx, "a"); len(evs) != 4 {
		t.Fatalf("a has %d events", len(evs))
	}
}

// A database opened read-only (a file this user may not write) reads as
// usual and refuses writes with ErrReadOnly.
func TestReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	evs := storetest.FakeEvents("ro", 1, 5)
	if err := s.Append(t.Context(), evs...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := sqlite.Open(path, sqlite.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if list, err := ro.List(t.Context(), store.Filter{}); err != nil || len(list) != 1 || list[0].LastSeq != 5 {
		t.Fatalf("list: %v %v", list, err)
	}
	if got, err := ro.Load(t.Context(), "ro"); err != nil || len(got) != 5 {
		t.Fatalf("load: %d %v", len(got), err)
	}
	if err := ro.Append(t.Context(), storetest.FakeEvent("ro", 6)); !errors.Is(err, sqlite.ErrReadOnly) {
		t.Fatalf("append: %v", err)
	}
	if _, err := ro.Acquire(t.Context(), "ro", "me", time.Second); !errors.Is(err, sqlite.ErrReadOnly) {
		t.Fatalf("acquire: %v", err)
	}
	done := make(chan error, 1)
	ro.AppendAsync(t.Context(), []loop.Event{storetest.FakeEvent("ro", 6)}, func(err error) { done <- err })
	if err := <-done; !errors.Is(err, sqlite.ErrReadOnly) {
		t.Fatalf("append async: %v", err)
	}
	// An older schema cannot be migrated read-only: it says where to do it.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec(fmt.Sprintf("PRAGMA user_version = %d", sqlite.SchemaVersion-1))
	db.Close()
	if _, err := sqlite.Open(path, sqlite.ReadOnly()); err == nil || !strings.Contains(err.Error(), "needs migrating") {
		t.Fatalf("an older schema, read-only: %v", err)
	}
}

// Another process holding the write lock past the busy timeout makes
// appends wait, not fail: they succeed once it lets go.
func TestAppendWaitsOutALockedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	s, err := sqlite.Open(path, sqlite.WithBusyTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(t.Context(), storetest.FakeEvent("l", 1)); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=50")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(700 * time.Millisecond)
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		close(released)
	}()
	if err := s.Append(t.Context(), storetest.FakeEvent("l", 2)); err != nil {
		t.Fatalf("append while another connection held the lock: %v", err)
	}
	<-released
	if got, err := s.Load(t.Context(), "l"); err != nil || len(got) != 2 {
		t.Fatalf("%d events, %v", len(got), err)
	}
}

// After a commit, appends nobody waits for are held (WithCommitInterval)
// so that what follows shares their transaction: readers and watchers see
// nothing of them until it commits. A plain Append is not held, and it
// commits everything queued before it; Close commits what is held.
func TestHeldAppendsCommitTogether(t *testing.T) {
	path := tempPath(t)
	s := open(t, path, sqlite.WithCommitInterval(time.Hour))
	ctx := t.Context()
	var notices atomic.Int32
	stop := s.Watch(func(store.Notice) { notices.Add(1) })
	defer stop()
	done := make(chan error, 8)
	notify := func(err error) { done <- err }

	// The writer has been idle: the first append commits at once.
	s.AppendAsync(ctx, storetest.FakeEvents("a", 1, 3), notify)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The next ones, within the interval, are held.
	s.AppendAsync(ctx, storetest.FakeEvents("a", 4, 6), notify)
	s.AppendAsync(ctx, storetest.FakeEvents("b", 1, 2), notify)
	select {
	case err := <-done:
		t.Fatalf("an append was answered (%v) before its transaction could commit", err)
	case <-time.After(200 * time.Millisecond):
	}
	if got := mustLoad(t, s, "a"); len(got) != 3 {
		t.Fatalf("readers see %d events of a; want the 3 committed", len(got))
	}
	if n := notices.Load(); n != 1 {
		t.Fatalf("%d notices before the held appends commit; want 1", n)
	}
	// A plain Append commits at once, and the held ones with it.
	if err := s.Append(ctx, storetest.FakeEvents("a", 7, 7)...); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("a plain Append returned before the appends queued ahead of it were answered")
		}
	}
	if got := mustLoad(t, s, "a"); len(got) != 7 {
		t.Fatalf("a has %d events, want 7", len(got))
	}
	if n := notices.Load(); n != 4 {
		t.Fatalf("%d notices, want 4 (one per append)", n)
	}
	// Close commits what is held.
	s.AppendAsync(ctx, storetest.FakeEvents("b", 3, 4), notify)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	if got := mustLoad(t, s, "b"); len(got) != 4 {
		t.Fatalf("b has %d events after Close and reopen, want 4", len(got))
	}
}

// The WAL is copied back into the database file while the store is open,
// by the checkpointer's connection (the writer's own commits never run a
// checkpoint): the file grows although far fewer pages were written than
// SQLite's own threshold (1,000) would wait for.
func TestWALIsCheckpointedWhileOpen(t *testing.T) {
	path := tempPath(t)
	s := open(t, path)
	defer s.Close()
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	for i := range 20 {
		mustAppend(t, s, storetest.FakeEvents(fmt.Sprintf("ckpt-%d", i), 1, 10)...)
	}
	for deadline := time.Now().Add(10 * time.Second); size() <= before; {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is still %d bytes 10 s after 20 commits: the WAL was not checkpointed", before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(mustLoad(t, s, "ckpt-19")); n != 10 {
		t.Fatalf("after the checkpoint: %d events, want 10", n)
	}
}

// An append someone waits for never overtakes an append of its session
// queued before it and not yet written — what a session does when it
// saves what must be durable right after handing its earlier events to a
// commit behind it. Sessions here queue an append and at once wait for the
// next, many at a time; every append succeeds and every log is whole and
// in order.
func TestWaitedAppendNeverOvertakesAQueuedOne(t *testing.T) {
	s := open(t, tempPath(t))
	defer s.Close()
	ctx := t.Context()
	const sessions, rounds = 16, 40
	errs := make(chan error, sessions)
	for i := range sessions {
		go func() {
			id := fmt.Sprintf("order-%d", i)
			var err error
			for r := range int64(rounds) {
				async := make(chan error, 1)
				s.AppendAsync(ctx, storetest.FakeEvents(id, 3*r+1, 3*r+2), func(err error) { async <- err })
				if err = s.Append(ctx, storetest.FakeEvents(id, 3*r+3, 3*r+3)...); err == nil {
					err = <-async
				}
				if err != nil {
					err = fmt.Errorf("session %s, round %d: %w", id, r, err)
					break
				}
			}
			errs <- err
		}()
	}
	for range sessions {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range sessions {
		id := fmt.Sprintf("order-%d", i)
		if got, want := mustLoad(t, s, id), storetest.FakeEvents(id, 1, 3*rounds); !storetest.EqualEvents(got, want) {
			t.Fatalf("session %s: %d events stored, not the %d appended in order", id, len(got), len(want))
		}
	}
}
