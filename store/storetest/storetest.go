// Package storetest is the conformance suite every store.Store must pass,
// plus synthetic event logs and benchmark drivers shared by the stores.
//
// A store passes when, for the events the suite appends, it keeps every
// field of every event (times as the same instant, to at least microsecond
// precision; Load may return them in any location), enforces sequence
// numbers exactly, writes each Append all or nothing, and lists sessions
// newest first by creation time, ties broken by ID descending.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/tool"
)

// Suite describes a store under test.
type Suite struct {
	// Open returns a new, empty store. The suite closes it.
	Open func(t *testing.T) store.Store
	// Reopen, when set, closes s and returns a store over the same data,
	// as after a process restart. Stores that keep nothing across Close
	// leave it nil and the persistence tests are skipped.
	Reopen func(t *testing.T, s store.Store) store.Store
	// OpenWithClock, when set, returns a new, empty store whose leases
	// and controls read time from now; the lease tests need it.
	OpenWithClock func(t *testing.T, now func() time.Time) store.Store
}

// Run runs the suite for a store without reopen support.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	Suite{Open: open}.Run(t)
}

// Run runs every conformance test as a subtest of t.
func (s Suite) Run(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"RoundTrip", s.testRoundTrip},
		{"SeqRules", s.testSeqRules},
		{"AllOrNothing", s.testAllOrNothing},
		{"InvalidEvents", s.testInvalidEvents},
		{"UnencodablePayload", s.testUnencodablePayload},
		{"NotFound", s.testNotFound},
		{"List", s.testList},
		{"ListFilters", s.testListFilters},
		{"Concurrent", s.testConcurrent},
		{"ConcurrentSameSession", s.testConcurrentSameSession},
		{"CancelledContext", s.testCancelledContext},
		{"LoadReturnsCopy", s.testLoadReturnsCopy},
		{"Closed", s.testClosed},
		{"Reopen", s.testReopen},
		{"LoadAfter", s.testLoadAfter},
		{"WatchOrder", s.testWatchOrder},
		{"ResumeAfterSeq", s.testResumeAfterSeq},
		{"Leases", s.testLeases},
		{"RenewAll", s.testRenewAll},
		{"AppendFenced", s.testAppendFenced},
		{"AppendAcquiring", s.testAppendAcquiring},
		{"AppendAcquiringBurst", s.testAppendAcquiringBurst},
		{"Controls", s.testControls},
		{"TenantAndDelete", s.testTenantAndDelete},
		{"Keys", s.testKeys},
		{"Prompts", s.testPrompts},
		{"ListByWorkspaceAndLabels", s.testListByWorkspaceAndLabels},
		{"ListForks", s.testListForks},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.fn)
	}
}

func (s Suite) open(t *testing.T) store.Store {
	t.Helper()
	st := s.Open(t)
	t.Cleanup(func() { st.Close() })
	return st
}

// base is a time with microsecond precision, so stores that keep only
// microseconds (PostgreSQL) pass.
var base = time.Date(2026, 2, 3, 4, 5, 6, 789012000, time.UTC)

// other is e with a different time: the same seq, another event.
func other(e loop.Event) loop.Event {
	e.Time = e.Time.Add(time.Second)
	return e
}

func at(seconds int) time.Time { return base.Add(time.Duration(seconds) * time.Second) }

func ev(id string, seq int64, t time.Time, p loop.Payload) loop.Event {
	return loop.NewEvent(id, seq, t, p)
}

// AllPayloads returns a log of sessionID holding one event of every type,
// with every field set.
func AllPayloads(sessionID string) []loop.Event {
	wrapUp := false
	ps := []loop.Payload{
		&loop.SessionStarted{
			Task: "fix the tests — ünïcödé ✓", SystemPrompt: "be careful", Model: "ollama/qwen3:8b",
			Mode: loop.ModeSelfReasoning, Tools: []string{"read_file", "shell"},
			Limits: loop.Limits{
				MaxIterations: 12, Timeout: loop.Duration(10 * time.Minute), ModelCallTimeout: loop.Duration(time.Minute), ToolCallTimeout: loop.Duration(30 * time.Second),
				BudgetTokens: 100000, BudgetUSD: 1.25, BudgetToolCalls: 40, MaxToolCallsPerTurn: 3, NoProgressAfter: 4,
				WrapUp: &wrapUp, OnStuck: "end", StuckErrorRepeats: 5, StuckRepeats: 6, StuckNoNudge: true,
			},
			Workspace: "/tmp/ws", Marker: "DONE", Labels: map[string]string{"team": "infra", "ticket": "T-1"},
		},
		&loop.IterationStarted{N: 1},
		&loop.ModelResponded{
			Iteration: 1, Text: "let me look\nat \"this\"",
			ToolCalls:    []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)}},
			Reasoning:    []model.ReasoningBlock{{Type: "thinking", Text: "hmm", Signature: "sig"}, {Type: "redacted_thinking", Data: "xyz"}},
			FinishReason: model.FinishToolCalls,
			Usage:        model.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 5, CacheWriteTokens: 7, ReasoningTokens: 9},
			CostUSD:      0.0123, DurationMS: 1500, Format: "hermes", WrapUp: true,
		},
		&loop.ModelFailed{Iteration: 1, Error: "HTTP 503", Retryable: true, Timeout: true, Malformed: true, DurationMS: 30000},
		&loop.ToolStarted{Iteration: 1, CallID: "c1", Name: "read_file", Input: json.RawMessage(`{"path":"a.go"}`)},
		&loop.ToolFinished{
			Iteration: 1, CallID: "c1", Name: "read_file", Output: "package a\n", IsError: true, DurationMS: 3,
			Modified: []tool.Modification{{Path: "a.go", Kind: tool.Changed}, {Path: "b.go", Kind: tool.Created}},
			Refused:  true, Unknown: true, Failed: true,
		},
		&loop.MessageAdded{Role: model.RoleUser, Content: "try again", Kind: loop.KindNudge},
		&loop.IterationEnded{N: 1, Status: loop.IterationFailed, Error: "tool error"},
		&loop.ApprovalRequested{CallID: "c2", Name: "shell", Input: json.RawMessage(`{"cmd":"rm -rf build"}`), ArgsHash: "h1"},
		&loop.ApprovalDecided{CallID: "c2", ArgsHash: "h1", Approved: true, Reason: "ok", EditedInput: json.RawMessage(`{"cmd":"rm -rf build/tmp"}`)},
		&loop.PlanUpdated{Goal: "green tests", Status: "active", Steps: []loop.PlanStep{{Title: "read", Status: "done", Result: "ok"}, {Title: "fix", Status: "todo"}}, Reason: "new info"},
		&loop.MemorySet{Key: "k", Value: json.RawMessage(`{"a":[1,2,3]}`)},
		&loop.MemorySet{Key: "k", Deleted: true},
		&loop.StuckDetected{Pattern: "repeat", Detail: "same call 3 times", Action: "nudge"},
		&loop.SessionPaused{Reason: loop.ReasonUser, Detail: "lunch"},
		&loop.SessionResumed{Note: "back"},
		&loop.SessionWaiting{Reason: loop.ReasonQuestion, Question: "which branch?"},
		&loop.SessionResumed{},
		&loop.Warning{Code: "limit", Message: "one iteration left"},
		&loop.SessionEnded{Status: loop.StatusCompleted, Reason: loop.ReasonCompleted, Detail: "all green", Answer: "fixed", Partial: true},
	}
	out := make([]loop.Event, len(ps))
	for i, p := range ps {
		out[i] = ev(sessionID, int64(i+1), at(i), p)
	}
	// One event in another zone: stores must keep the instant.
	out[3].Time = out[3].Time.In(time.FixedZone("X", 5*3600+1800))
	return out
}

// EqualEvents reports whether two logs hold the same events, comparing
// times as instants.
func EqualEvents(got, want []loop.Event) bool {
	return reflect.DeepEqual(normalize(got), normalize(want))
}

func normalize(events []loop.Event) []loop.Event {
	out := slices.Clone(events)
	for i := range out {
		out[i].Time = out[i].Time.UTC()
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func requireEvents(t *testing.T, got, want []loop.Event) {
	t.Helper()
	if EqualEvents(got, want) {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	g, w := normalize(got), normalize(want)
	for i := range w {
		if !reflect.DeepEqual(g[i], w[i]) {
			gj, _ := json.Marshal(g[i])
			wj, _ := json.Marshal(w[i])
			t.Fatalf("event %d differs:\n got %s\nwant %s\n(got %#v)", i+1, gj, wj, g[i].Data)
		}
	}
}

func mustAppend(t *testing.T, st store.Store, events ...loop.Event) {
	t.Helper()
	if err := st.Append(t.Context(), events...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func mustLoad(t *testing.T, st store.Store, id string) []loop.Event {
	t.Helper()
	events, err := st.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("Load(%s): %v", id, err)
	}
	return events
}

func (s Suite) testRoundTrip(t *testing.T) {
	st := s.open(t)
	all := AllPayloads("rt")
	if got, want := len(all), 20; got != want {
		t.Fatalf("AllPayloads has %d events, want %d", got, want)
	}
	// Cover every type (the list in loop is unexported, so count them).
	types := map[loop.EventType]bool{}
	for _, e := range all {
		types[e.Type] = true
	}
	if len(types) != 18 {
		t.Fatalf("AllPayloads covers %d event types, want 18 — a type was added to loop; add it here", len(types))
	}
	// One at a time, then in a batch.
	mustAppend(t, st, all[0])
	mustAppend(t, st, all[1])
	mustAppend(t, st, all[2:]...)
	requireEvents(t, mustLoad(t, st, "rt"), all)

	// The synthetic logs round-trip too.
	fake := FakeEvents("rt-fake", 1, 23)
	mustAppend(t, st, fake...)
	requireEvents(t, mustLoad(t, st, "rt-fake"), fake)

	// A zero time survives.
	z := ev("rt-zero", 1, time.Time{}, &loop.SessionStarted{Task: "t"})
	mustAppend(t, st, z)
	if got := mustLoad(t, st, "rt-zero"); !got[0].Time.IsZero() {
		t.Fatalf("zero time came back as %v", got[0].Time)
	}
}

func (s Suite) testSeqRules(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	log := FakeEvents("seq", 1, 8)

	if err := st.Append(ctx, log[1]); !errors.Is(err, store.ErrSeqConflict) {
		t.Fatalf("first event with seq 2: got %v, want ErrSeqConflict", err)
	}
	zero := log[0]
	zero.Seq = 0
	if err := st.Append(ctx, zero); !errors.Is(err, store.ErrSeqConflict) {
		t.Fatalf("seq 0: got %v, want ErrSeqConflict", err)
	}
	if _, err := st.Load(ctx, "seq"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after refused appends: Load got %v, want ErrNotFound", err)
	}
	mustAppend(t, st, log[:3]...)

	tests := []struct {
		name   string
		events []loop.Event
	}{
		{"same seq, another event", []loop.Event{other(log[2])}},
		{"retry ending past the log", log[2:4]},
		{"replay from start", log[0:4]},
		{"gap", log[4:5]},
		{"gap inside append", []loop.Event{log[3], log[5]}},
		{"repeat inside append", []loop.Event{log[3], log[4], log[4]}},
		{"out of order", []loop.Event{log[4], log[3]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := st.Append(ctx, tt.events...)
			if !errors.Is(err, store.ErrSeqConflict) {
				t.Fatalf("got %v, want ErrSeqConflict", err)
			}
			requireEvents(t, mustLoad(t, st, "seq"), log[:3])
		})
	}
	// A retry of an append that was stored (its outcome unknown to the
	// caller) succeeds and writes nothing.
	mustAppend(t, st, log[2])
	mustAppend(t, st, log[1:3]...)
	requireEvents(t, mustLoad(t, st, "seq"), log[:3])
	mustAppend(t, st, log[3:5]...)
	mustAppend(t, st, log[5])
	mustAppend(t, st, log[6:]...)
	requireEvents(t, mustLoad(t, st, "seq"), log)
}

func (s Suite) testAllOrNothing(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	a := FakeEvents("aon-a", 1, 6)
	b := FakeEvents("aon-b", 1, 3)
	mustAppend(t, st, a[:3]...)

	// One append spanning two sessions: b is fine, a conflicts.
	err := st.Append(ctx, b[0], b[1], a[2], a[3])
	if !errors.Is(err, store.ErrSeqConflict) {
		t.Fatalf("got %v, want ErrSeqConflict", err)
	}
	if _, err := st.Load(ctx, "aon-b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("session b after failed append: got %v, want ErrNotFound", err)
	}
	requireEvents(t, mustLoad(t, st, "aon-a"), a[:3])
	list, err := st.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "aon-a" || list[0].LastSeq != 3 {
		t.Fatalf("List after failed append: %+v", list)
	}

	// Both fine: both written.
	mustAppend(t, st, b[0], a[3], b[1], a[4])
	requireEvents(t, mustLoad(t, st, "aon-a"), a[:5])
	requireEvents(t, mustLoad(t, st, "aon-b"), b[:2])
}

func (s Suite) testInvalidEvents(t *testing.T) {
	st := s.open(t)
	good := FakeEvent("inv", 1)
	tests := []struct {
		name   string
		mutate func(e *loop.Event)
	}{
		{"no session", func(e *loop.Event) { e.SessionID = "" }},
		{"no payload", func(e *loop.Event) { e.Data = nil }},
		{"type mismatch", func(e *loop.Event) { e.Type = loop.TypeWarning }},
		{"version 0", func(e *loop.Event) { e.Version = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := good
			tt.mutate(&e)
			if err := st.Append(t.Context(), e); err == nil {
				t.Fatal("Append accepted an invalid event")
			}
			if _, err := st.Load(t.Context(), "inv"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Load after refused append: got %v, want ErrNotFound", err)
			}
		})
	}
	if err := st.Append(t.Context()); err != nil {
		t.Fatalf("Append of no events: %v", err)
	}
}

// An event whose payload cannot be encoded (a NaN) is refused with an error
// naming it, whether the caller waits for the append or not (the writer
// encodes the latter), and nothing of it is stored; the store goes on.
func (s Suite) testUnencodablePayload(t *testing.T) {
	if s.Reopen == nil {
		t.Skip("store keeps events as they are: it encodes nothing")
	}
	st := s.open(t)
	bad := func(id string) loop.Event {
		e := FakeEvent(id, 1)
		e.Data.(*loop.SessionStarted).Limits.BudgetUSD = math.NaN()
		return e
	}
	check := func(id string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "encode event 1") {
			t.Fatalf("append of an unencodable payload: got %v, want an error naming event 1", err)
		}
		if _, err := st.Load(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Load after the refused append: got %v, want ErrNotFound", err)
		}
	}
	check("nan", st.Append(t.Context(), bad("nan")))
	if async, ok := st.(loop.AsyncLog); ok {
		done := make(chan error, 1)
		async.AppendAsync(t.Context(), []loop.Event{bad("nan-async")}, func(err error) { done <- err })
		check("nan-async", <-done)
	}
	mustAppend(t, st, FakeEvent("nan", 1))
}

func (s Suite) testNotFound(t *testing.T) {
	st := s.open(t)
	mustAppend(t, st, FakeEvent("exists", 1))
	_, err := st.Load(t.Context(), "does-not-exist")
	if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, loop.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
}

// listFixture appends sessions in several states and returns their
// expected summaries, newest first.
func listFixture(t *testing.T, st store.Store) []loop.Summary {
	t.Helper()
	type spec struct {
		id      string
		created int
		tail    []loop.Payload
	}
	specs := []spec{
		{"l-running", 10, []loop.Payload{&loop.IterationStarted{N: 1}, &loop.ModelResponded{Iteration: 1, Usage: model.Usage{InputTokens: 100, OutputTokens: 23}, CostUSD: 0.5}, &loop.IterationStarted{N: 2}}},
		{"l-completed", 20, []loop.Payload{&loop.IterationStarted{N: 1}, &loop.ModelResponded{Iteration: 1, Usage: model.Usage{InputTokens: 7, OutputTokens: 3}, CostUSD: 0.25}, &loop.SessionEnded{Status: loop.StatusCompleted, Reason: loop.ReasonCompleted}}},
		{"l-paused", 30, []loop.Payload{&loop.SessionPaused{Reason: loop.ReasonUser}}},
		{"l-failed", 40, []loop.Payload{&loop.IterationStarted{N: 1}, &loop.SessionEnded{Status: loop.StatusFailed, Reason: loop.ReasonMaxIterations}}},
		{"l-waiting", 50, []loop.Payload{&loop.SessionWaiting{Reason: loop.ReasonApproval}}},
		{"l-resumed", 60, []loop.Payload{&loop.SessionPaused{Reason: loop.ReasonUser}, &loop.SessionResumed{}}},
		// Same creation time as l-resumed: ID breaks the tie.
		{"l-tie", 60, nil},
		{"l-terminated", 5, []loop.Payload{&loop.SessionEnded{Status: loop.StatusTerminated, Reason: loop.ReasonTerminated}}},
	}
	var want []loop.Summary
	for _, sp := range specs {
		events := []loop.Event{ev(sp.id, 1, at(sp.created), &loop.SessionStarted{Task: "task " + sp.id, Model: "m/" + sp.id})}
		for i, p := range sp.tail {
			events = append(events, ev(sp.id, int64(i+2), at(sp.created+i+1), p))
		}
		// Append in two calls so summaries are updated incrementally.
		mustAppend(t, st, events[0])
		if len(events) > 1 {
			mustAppend(t, st, events[1:]...)
		}
		var sum loop.Summary
		for _, e := range events {
			sum.Apply(e)
		}
		want = append(want, sum)
	}
	slices.SortStableFunc(want, func(a, b loop.Summary) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		if a.ID > b.ID {
			return -1
		}
		return 1
	})
	return want
}

func normalizeSummaries(list []loop.Summary) []loop.Summary {
	out := slices.Clone(list)
	for i := range out {
		out[i].CreatedAt, out[i].UpdatedAt = out[i].CreatedAt.UTC(), out[i].UpdatedAt.UTC()
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func requireSummaries(t *testing.T, got, want []loop.Summary) {
	t.Helper()
	g, w := normalizeSummaries(got), normalizeSummaries(want)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("List:\n got %s\nwant %s", ids(g), ids(w))
	}
}

func ids(list []loop.Summary) string {
	b, _ := json.MarshalIndent(list, "", " ")
	return string(b)
}

func (s Suite) testList(t *testing.T) {
	st := s.open(t)
	got, err := st.List(t.Context(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("empty store lists %d sessions", len(got))
	}
	want := listFixture(t, st)
	got, err = st.List(t.Context(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	requireSummaries(t, got, want)

	// Spot-check the fields against hand-computed values.
	byID := map[string]loop.Summary{}
	for _, s := range got {
		byID[s.ID] = s
	}
	r := byID["l-running"]
	if r.Task != "task l-running" || r.Model != "m/l-running" || r.Status != loop.StatusRunning || r.Iteration != 2 ||
		r.Tokens != 123 || r.CostUSD != 0.5 || r.LastSeq != 4 || !r.CreatedAt.Equal(at(10)) || !r.UpdatedAt.Equal(at(13)) {
		t.Errorf("l-running summary: %+v", r)
	}
	if c := byID["l-completed"]; c.Status != loop.StatusCompleted || c.Reason != loop.ReasonCompleted || c.Tokens != 10 || c.CostUSD != 0.25 {
		t.Errorf("l-completed summary: %+v", c)
	}
	if p := byID["l-resumed"]; p.Status != loop.StatusRunning || p.Reason != "" {
		t.Errorf("l-resumed summary: %+v", p)
	}
}

func (s Suite) testListFilters(t *testing.T) {
	st := s.open(t)
	all := listFixture(t, st)
	keep := func(f func(loop.Summary) bool) []loop.Summary {
		var out []loop.Summary
		for _, s := range all {
			if f(s) {
				out = append(out, s)
			}
		}
		return out
	}
	tests := []struct {
		name   string
		filter store.Filter
		want   []loop.Summary
	}{
		{"all", store.Filter{}, all},
		{"status running", store.Filter{Status: []loop.Status{loop.StatusRunning}}, keep(func(s loop.Summary) bool { return s.Status == loop.StatusRunning })},
		{"status paused or failed", store.Filter{Status: []loop.Status{loop.StatusPaused, loop.StatusFailed}}, keep(func(s loop.Summary) bool {
			return s.Status == loop.StatusPaused || s.Status == loop.StatusFailed
		})},
		{"status none match", store.Filter{Status: []loop.Status{loop.StatusError}}, nil},
		{"unfinished", store.Filter{Unfinished: true}, keep(func(s loop.Summary) bool { return !s.Status.Finished() })},
		{"unfinished and completed", store.Filter{Unfinished: true, Status: []loop.Status{loop.StatusCompleted, loop.StatusPaused}}, keep(func(s loop.Summary) bool { return s.Status == loop.StatusPaused })},
		{"limit", store.Filter{Limit: 3}, all[:3]},
		{"offset", store.Filter{Offset: 5}, all[5:]},
		{"limit and offset", store.Filter{Limit: 2, Offset: 3}, all[3:5]},
		{"offset past end", store.Filter{Offset: 100}, nil},
		{"limit past end", store.Filter{Limit: 100}, all},
		{"unfinished with limit", store.Filter{Unfinished: true, Limit: 2, Offset: 1}, keep(func(s loop.Summary) bool { return !s.Status.Finished() })[1:3]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.List(t.Context(), tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			requireSummaries(t, got, tt.want)
		})
	}
}

func (s Suite) testConcurrent(t *testing.T) {
	st := s.open(t)
	const sessions, perSession = 24, 21
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, sessions*2)
	for i := range sessions {
		id := fmt.Sprintf("conc-%02d", i)
		wg.Go(func() {
			log := FakeEvents(id, 1, perSession)
			for j := 0; j < len(log); {
				n := min(1+j%3, len(log)-j) // appends of 1–3 events
				if err := st.Append(ctx, log[j:j+n]...); err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					return
				}
				j += n
			}
		})
		wg.Go(func() { // a reader per session, racing the writer
			for range 5 {
				if _, err := st.Load(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
					errs <- fmt.Errorf("load %s: %w", id, err)
					return
				}
				if _, err := st.List(ctx, store.Filter{Unfinished: true, Limit: 10}); err != nil {
					errs <- fmt.Errorf("list: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	list, err := st.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != sessions {
		t.Fatalf("List has %d sessions, want %d", len(list), sessions)
	}
	for _, sum := range list {
		requireEvents(t, mustLoad(t, st, sum.ID), FakeEvents(sum.ID, 1, perSession))
		if sum.LastSeq != perSession {
			t.Errorf("%s: LastSeq %d, want %d", sum.ID, sum.LastSeq, perSession)
		}
	}
}

// testConcurrentSameSession has writers race for the same seqs: exactly
// one wins each, the rest get ErrSeqConflict, and the log has no gaps.
func (s Suite) testConcurrentSameSession(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	const writers, total = 6, 30
	mustAppend(t, st, FakeEvent("race", 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for w := range writers {
		wg.Go(func() {
			for {
				events, err := st.Load(ctx, "race")
				if err != nil {
					t.Error(err)
					return
				}
				next := int64(len(events)) + 1
				if next > total {
					return
				}
				// Each writer's event differs (an identical one would be
				// a retry, which succeeds).
				e := FakeEvent("race", next)
				e.Time = e.Time.Add(time.Duration(w) * time.Millisecond)
				err = st.Append(ctx, e)
				mu.Lock()
				switch {
				case err == nil:
					wins++
				case errors.Is(err, store.ErrSeqConflict):
					conflicts++
				default:
					t.Error(err)
				}
				mu.Unlock()
				if err != nil && !errors.Is(err, store.ErrSeqConflict) {
					return
				}
			}
		})
	}
	wg.Wait()
	if wins != total-1 {
		t.Errorf("%d appends won, want %d (conflicts: %d)", wins, total-1, conflicts)
	}
	got := mustLoad(t, st, "race")
	for i, e := range got {
		if e.Seq != int64(i+1) || e.Type != FakeEvent("race", e.Seq).Type {
			t.Fatalf("event %d: seq %d, type %s", i, e.Seq, e.Type)
		}
	}
	if len(got) != total {
		t.Fatalf("%d events, want %d", len(got), total)
	}
}

func (s Suite) testCancelledContext(t *testing.T) {
	st := s.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := st.Append(ctx, FakeEvent("cancel", 1))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context: got %v, want context.Canceled", err)
	}
	if _, err := st.Load(t.Context(), "cancel"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Load after cancelled append: got %v, want ErrNotFound", err)
	}
	mustAppend(t, st, FakeEvent("cancel", 1))
}

func (s Suite) testLoadReturnsCopy(t *testing.T) {
	st := s.open(t)
	log := FakeEvents("copy", 1, 3)
	mustAppend(t, st, log...)
	got := mustLoad(t, st, "copy")
	got[0] = log[2]
	_ = append(got[:1], log[0]) // must not write into the store's array
	requireEvents(t, mustLoad(t, st, "copy"), log)
}

func (s Suite) testClosed(t *testing.T) {
	st := s.Open(t)
	mustAppend(t, st, FakeEvent("closed", 1))
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st.Append(t.Context(), FakeEvent("closed", 2)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Append after Close: got %v, want ErrClosed", err)
	}
	if _, err := st.Load(t.Context(), "closed"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Load after Close: got %v, want ErrClosed", err)
	}
	if _, err := st.List(t.Context(), store.Filter{}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("List after Close: got %v, want ErrClosed", err)
	}
	st.Close() // a second Close must not panic
}

func (s Suite) testReopen(t *testing.T) {
	if s.Reopen == nil {
		t.Skip("store does not persist across Close")
	}
	st := s.Open(t)
	all := AllPayloads("reopen")
	fake := FakeEvents("reopen-fake", 1, 12)
	mustAppend(t, st, all...)
	mustAppend(t, st, fake[:7]...)
	before, err := st.List(t.Context(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}

	st = s.Reopen(t, st)
	t.Cleanup(func() { st.Close() })
	requireEvents(t, mustLoad(t, st, "reopen"), all)
	requireEvents(t, mustLoad(t, st, "reopen-fake"), fake[:7])
	after, err := st.List(t.Context(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	requireSummaries(t, after, before)

	// A session's first events, sent again to a store that has not read
	// the session since it opened: a retry succeeds and writes nothing,
	// anything else at event 1 is a conflict.
	if err := st.Append(t.Context(), fake[:2]...); err != nil {
		t.Fatalf("a retry of the first events after reopen: %v", err)
	}
	st = s.Reopen(t, st)
	t.Cleanup(func() { st.Close() })
	if err := st.Append(t.Context(), other(fake[0])); !errors.Is(err, store.ErrSeqConflict) {
		t.Fatalf("another first event after reopen: got %v, want ErrSeqConflict", err)
	}
	st = s.Reopen(t, st)
	t.Cleanup(func() { st.Close() })
	if err := st.Append(t.Context(), fake[:8]...); !errors.Is(err, store.ErrSeqConflict) {
		t.Fatalf("a replay from event 1 past the log's end after reopen: got %v, want ErrSeqConflict", err)
	}
	requireEvents(t, mustLoad(t, st, "reopen-fake"), fake[:7])

	// The log continues where it stopped, and its end is still enforced.
	if err := st.Append(t.Context(), other(fake[6])); !errors.Is(err, store.ErrSeqConflict) {
		t.Fatalf("another event at the last seq after reopen: got %v, want ErrSeqConflict", err)
	}
	if err := st.Append(t.Context(), fake[6]); err != nil {
		t.Fatalf("a retry of the last event after reopen: %v", err)
	}
	if err := st.Append(t.Context(), fake[8]); !errors.Is(err, store.ErrSeqConflict) {
		t.Fatalf("gap after reopen: got %v, want ErrSeqConflict", err)
	}
	mustAppend(t, st, fake[7:]...)

	st = s.Reopen(t, st)
	t.Cleanup(func() { st.Close() })
	requireEvents(t, mustLoad(t, st, "reopen-fake"), fake)
}
