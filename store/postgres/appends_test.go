package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/appendcheck"
	"github.com/agentloop/agentloop/store/internal/appendq"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/store/storetest"
)

// A session's appends run in the order given, whatever statement each
// lands in: an append joins the newest shared statement only when nothing
// of its session is queued at or after it.
func TestAppendsKeepEachSessionsOrder(t *testing.T) {
	a := newAppends()
	progress := func(id string) {
		run := appendcheck.Run{SessionID: id, First: 2, Last: 2}
		a.progress(&request{}, run, loop.Summary{}, 1, nil, nil)
	}
	progress("A")
	progress("B")
	progress("A")
	a.single("C", "start C", nil, true)
	progress("D")
	progress("C")
	var got []string
	for _, it := range a.items {
		if it.rows != nil {
			var ids []string
			for _, row := range it.rows.rows {
				ids = append(ids, row.run.SessionID)
			}
			got = append(got, fmt.Sprint(ids, it.rows.k))
		} else {
			got = append(got, fmt.Sprint(it.q, " ", it.k))
		}
	}
	want := []string{"[A B] [0 1]", "[A D] [2 4]", "start C 3", "[C] [5]"}
	if !slices.Equal(got, want) {
		t.Fatalf("statements %q, want %q", got, want)
	}
}

// One shared statement tells each of its appends apart, in a pipeline
// with a single row's statement after it: the ones whose session's log
// continues where they say are written, one whose lease
// token is not the session's is refused as a lost lease, one whose log
// moved on elsewhere is refused as a conflict, and a session's later
// append after a refused one is refused too.
func TestSharedStatementTellsEachAppend(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	url := pgtest.URL(t)
	st, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	other, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	leases := map[string]store.Lease{}
	for _, id := range []string{"ok", "lost", "moved"} {
		le, err := st.AppendAcquiring(ctx, "me", time.Minute, storetest.FakeEvents(id, 1, 1)...)
		if err != nil {
			t.Fatal(err)
		}
		leases[id] = le
	}
	// A writer of the test's own, as the store's goroutine runs its
	// writer, knowing the sessions as they are now.
	conn, err := st.writerConn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Closed first, as Store.Close does: the pool must not lend its
		// planner settings to a reader.
		conn.Conn().Close(context.Background())
		conn.Release()
	}()
	w := &writer{s: st, conn: conn, cache: map[string]loop.Summary{}, cacheSize: 100}
	sums, err := st.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range sums {
		w.cache[sum.ID] = sum
	}
	// Another process continues "moved" with an event of its own: the
	// writer still believes its log ends at 1.
	theirs := storetest.FakeEvent("elsewhere", 2)
	theirs.SessionID = "moved"
	if err := other.AppendFenced(ctx, leases["moved"].Token, theirs); err != nil {
		t.Fatal(err)
	}
	type appendCase struct {
		id       string
		from, to int64
		token    int64
		want     error
	}
	appends := []appendCase{
		{"ok", 2, 3, leases["ok"].Token, nil},
		{"lost", 2, 2, leases["lost"].Token + 1, store.ErrLeaseLost},
		{"moved", 2, 2, leases["moved"].Token, loop.ErrSeqConflict},
		{"ok", 4, 4, leases["ok"].Token, nil},
		{"lost", 3, 3, leases["lost"].Token, loop.ErrSeqConflict},
		// Alone in a third statement, which is then a single row's.
		{"ok", 5, 5, leases["ok"].Token, nil},
	}
	var batch []*request
	var dones []chan error
	for _, ap := range appends {
		done := make(chan error, 1)
		r, err := appendq.New(ctx, storetest.FakeEvents(ap.id, ap.from, ap.to), true, ap.token, done, nil)
		if err != nil {
			t.Fatal(err)
		}
		batch, dones = append(batch, r), append(dones, done)
	}
	w.write(batch)
	for k, ap := range appends {
		err := <-dones[k]
		if !errors.Is(err, ap.want) || (ap.want == nil) != (err == nil) {
			t.Errorf("append %d (%s %d–%d): %v, want %v", k, ap.id, ap.from, ap.to, err, ap.want)
		}
	}
	for id, want := range map[string][]loop.Event{
		"ok":    storetest.FakeEvents("ok", 1, 5),
		"lost":  storetest.FakeEvents("lost", 1, 1),
		"moved": append(storetest.FakeEvents("moved", 1, 1), theirs),
	} {
		events, err := st.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !storetest.EqualEvents(events, want) {
			t.Errorf("session %s: %d events stored, want the %d given", id, len(events), len(want))
		}
	}
}
