package postgres

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
)

// A schema 2 database's events, one row each, load the same once migrated
// to batches (schema 3) — exact payloads, times to the microsecond, the
// zero time — and the log carries on from its last event.
func TestMigrationToBatchesKeepsEveryEvent(t *testing.T) {
	ctx := t.Context()
	url, pool := atSchema(t, 2)
	at := time.Date(2026, 11, 29, 8, 0, 0, 123456000, time.UTC)
	before := []loop.Event{
		loop.NewEvent("s1", 1, at, &loop.SessionStarted{Task: "naïve — “quoted”", Tenant: "acme"}),
		loop.NewEvent("s1", 2, at.Add(time.Microsecond), &loop.ToolFinished{Iteration: 1, CallID: "c1", Name: "run", Output: "line one\nline two\t\"x\" 😀"}),
		loop.NewEvent("s1", 3, time.Time{}, &loop.Warning{Code: "x", Message: "no time"}),
	}
	for _, e := range before {
		data, err := e.EncodeData()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO events (tenant, session_id, seq, type, version, time, data) VALUES ('acme', $1, $2, $3, $4, $5, $6::json)`,
			e.SessionID, e.Seq, string(e.Type), e.Version, e.Time, string(data)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO sessions (id, tenant, task, model, status, reason, iteration, max_iterations, tokens, cost_usd, created_at, updated_at, last_seq, workspace, labels)
VALUES ('s1', 'acme', 't', '', 'running', '', 1, 0, 0, 0, $1, $1, 3, '', '{}')`, at); err != nil {
		t.Fatal(err)
	}
	st := migrated(t, url, pool)
	got, err := st.Load(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(before) {
		t.Fatalf("%d events after migrating, want %d", len(got), len(before))
	}
	for i, e := range before {
		wantData, _ := e.EncodeData()
		gotData, _ := got[i].EncodeData()
		if got[i].Seq != e.Seq || got[i].Type != e.Type || got[i].Version != e.Version || !got[i].Time.Equal(e.Time) || string(gotData) != string(wantData) {
			t.Errorf("event %d after migrating:\n got %+v %s\nwant %+v %s", i+1, got[i], gotData, e, wantData)
		}
	}
	if !reflect.DeepEqual(got[1].Data, before[1].Data) {
		t.Errorf("tool output after migrating: %+v", got[1].Data)
	}
	next := loop.NewEvent("s1", 4, at.Add(time.Second), &loop.Warning{Code: "x", Message: "after"})
	if err := st.Append(ctx, next); err != nil {
		t.Fatalf("append after migrating: %v", err)
	}
	if after, err := st.LoadAfter(ctx, "s1", 2); err != nil || len(after) != 2 || after[1].Seq != 4 {
		t.Fatalf("events after 2: %+v %v", after, err)
	}
}
