package sqlite

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

func TestFinishedMatchesLoop(t *testing.T) {
	all := []loop.Status{loop.StatusIdle, loop.StatusRunning, loop.StatusPaused, loop.StatusWaiting,
		loop.StatusCompleted, loop.StatusFailed, loop.StatusTerminated, loop.StatusError}
	for _, st := range all {
		if st.Finished() != slices.Contains(finished, st) {
			t.Errorf("status %s: Finished() = %v but the store's list disagrees", st, st.Finished())
		}
	}
}

func TestTimeEncoding(t *testing.T) {
	for _, tm := range []time.Time{
		{},
		time.Unix(0, 0),
		time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", -7*3600)),
		time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2260, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		got := decodeTime(encodeTime(tm))
		if !got.Equal(tm) || got.IsZero() != tm.IsZero() {
			t.Errorf("%v came back as %v", tm, got)
		}
	}
}

func TestDSN(t *testing.T) {
	o := options{busyTimeout: 2 * time.Second}
	if got, want := dsn("/tmp/a?b#c%d.db", o, true), "file:/tmp/a%3fb%23c%25d.db?_busy_timeout=2000&_query_only=1"; got != want {
		t.Errorf("dsn = %q, want %q", got, want)
	}
}

// LoadAfter reads only the batches it needs: a search of the (session_id,
// last_seq) index on both columns, with no sort and no scan of the table.
func TestLoadAfterUsesIndex(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := queryPlan(t, s, loadAfterSQL, "x", 5)
	joined := strings.Join(plan, "; ")
	if len(plan) != 1 || !strings.Contains(joined, "USING INDEX") || !strings.Contains(joined, "last_seq>?") {
		t.Fatalf("query plan %q: want one search of the (session_id, last_seq) index with last_seq>?", joined)
	}
}

// Listing one tenant's or one workspace's sessions searches its partial
// index (schema 8), which a filter can use only by stating that the value
// is not empty.
func TestListByTenantOrWorkspaceUsesItsIndex(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		f     store.Filter
		index string
	}{
		{store.Filter{Tenant: "acme"}, "sessions_tenant_newest"},
		{store.Filter{Tenant: "acme", Limit: 10}, "sessions_tenant_newest"},
		{store.Filter{Workspace: "/work/x"}, "sessions_workspace"},
		{store.Filter{}, "sessions_newest"},
	} {
		q, args := listSQL(c.f)
		if joined := strings.Join(queryPlan(t, s, q, args...), "; "); !strings.Contains(joined, "INDEX "+c.index) {
			t.Errorf("filter %+v: query plan %q, want a search of %s", c.f, joined, c.index)
		}
	}
}

// queryPlan returns the steps of SQLite's plan for q.
func queryPlan(t *testing.T, s *Store, q string, args ...any) []string {
	t.Helper()
	rows, err := s.rdb.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}

// whileLocked tries again while the database is locked by another process
// (as opening it can be, at once, while another process closes it), and
// not on any other failure.
func TestWhileLocked(t *testing.T) {
	locked := errors.New("database is locked (5) (SQLITE_BUSY)")
	calls := 0
	if err := whileLocked(func() error {
		if calls++; calls < 3 {
			return locked
		}
		return nil
	}); err != nil || calls != 3 {
		t.Fatalf("locked twice then free: %v after %d calls", err, calls)
	}
	other := errors.New("disk I/O error")
	calls = 0
	if err := whileLocked(func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("another failure: %v after %d calls, want it at once", err, calls)
	}
}
