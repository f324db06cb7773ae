package sqlite

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/eventbatch"
)

// A schema 10 database's forks (recorded before the summary had the
// column) are found by their origin once migrated to schema 11, and a
// session that is not a fork is not.
func TestMigrationFindsForksRecordedBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v10.db")
	db := databaseAt(t, path, 10)
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	sessions := []struct {
		id   string
		from *loop.ForkedFrom
	}{
		{"orig", nil},
		{"fork-a", &loop.ForkedFrom{ID: "orig", Iteration: 5}},
		// The copied log's text mentions "forked_from": in a later event.
		{"fork-b", &loop.ForkedFrom{ID: "orig", Iteration: 2}},
		{"plain", nil},
	}
	for i, s := range sessions {
		events := []loop.Event{
			loop.NewEvent(s.id, 1, now.Add(time.Duration(i)*time.Second), &loop.SessionStarted{Task: `a "forked_from": task`, ForkedFrom: s.from}),
			loop.NewEvent(s.id, 2, now, &loop.Warning{Message: "\"forked_from\":{\"id\":\"x\"}\n"}),
		}
		var b []byte
		for _, e := range events {
			data, err := e.EncodeData()
			if err != nil {
				t.Fatal(err)
			}
			b = eventbatch.AppendFrame(b, string(e.Type), e.Version, encodeTime(e.Time), data)
		}
		if _, err := db.Exec(`INSERT INTO sessions (id, task, model, status, reason, iteration, tokens, cost_usd, created_at, updated_at, last_seq) VALUES (?, 't', 'm', 'running', '', 0, 0, 0, ?, 0, 2)`,
			s.id, encodeTime(events[0].Time)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO event_batches (session_id, first_seq, last_seq, events) VALUES (?, 1, 2, ?)`, s.id, b); err != nil {
			t.Fatal(err)
		}
	}
	s := openMigrated(t, db, path)
	forks, err := s.List(t.Context(), store.Filter{ForkedFrom: "orig"})
	if err != nil {
		t.Fatal(err)
	}
	var got []loop.ForkedFrom
	var ids []string
	for _, f := range forks {
		ids = append(ids, f.ID)
		got = append(got, *f.ForkedFrom)
	}
	if !reflect.DeepEqual(ids, []string{"fork-b", "fork-a"}) || !reflect.DeepEqual(got, []loop.ForkedFrom{{ID: "orig", Iteration: 2}, {ID: "orig", Iteration: 5}}) {
		t.Fatalf("forks of orig after migrating: %v %v", ids, got)
	}
	all, err := s.List(t.Context(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range all {
		if (sum.ID == "orig" || sum.ID == "plain") && sum.ForkedFrom != nil {
			t.Fatalf("%s is not a fork: %+v", sum.ID, sum.ForkedFrom)
		}
	}
}
