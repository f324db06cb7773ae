package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// memLog is the smallest Log: the runner's own contract, checked.
type memLog struct {
	mu     sync.Mutex
	events map[string][]loop.Event
}

func newMemLog() *memLog { return &memLog{events: map[string][]loop.Event{}} }

func (l *memLog) Append(_ context.Context, evs ...loop.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range evs {
		want := int64(len(l.events[e.SessionID])) + 1
		for _, p := range evs[:i] {
			if p.SessionID == e.SessionID {
				want++
			}
		}
		if e.Seq != want {
			return fmt.Errorf("%w: %s seq %d, want %d", loop.ErrSeqConflict, e.SessionID, e.Seq, want)
		}
	}
	for _, e := range evs {
		// Round-trip through JSON as a durable store would.
		b, err := e.MarshalJSON()
		if err != nil {
			return err
		}
		var back loop.Event
		if err := json.Unmarshal(b, &back); err != nil {
			return err
		}
		l.events[e.SessionID] = append(l.events[e.SessionID], back)
	}
	return nil
}

func (l *memLog) Load(_ context.Context, id string) ([]loop.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs, ok := l.events[id]
	if !ok {
		return nil, fmt.Errorf("%s: %w", id, loop.ErrNotFound)
	}
	return append([]loop.Event(nil), evs...), nil
}

func (l *memLog) types(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events[id] {
		out = append(out, string(e.Type))
	}
	return out
}

// truncate drops events after seq, as a crash would.
func (l *memLog) truncate(id string, keep int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events[id] = l.events[id][:keep]
}

// fakeClock advances one millisecond per reading.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

var objSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)

// echoTool returns "read <path>" and records calls.
func echoTool(name string, rec *recorder) tool.Tool {
	return tool.Func(model.ToolSpec{Name: name, Description: "test tool", Parameters: objSchema},
		func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			var a struct{ Path string }
			_ = json.Unmarshal(args, &a)
			if rec != nil {
				rec.add(name + ":" + a.Path)
			}
			if strings.HasPrefix(a.Path, "fail") {
				return tool.Result{}, fmt.Errorf("cannot open %s", a.Path)
			}
			return tool.Result{Output: name + " " + a.Path}, nil
		})
}

type env struct {
	log   *memLog
	clock *fakeClock
	ids   int
}

func newEnv() *env { return &env{log: newMemLog(), clock: newClock()} }

func (e *env) runner(t *testing.T, m model.Model, tools []tool.Tool, mut func(*loop.Config)) *loop.Runner {
	t.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := loop.Config{Model: m, ModelName: "test-model", Tools: reg, Log: e.log, Clock: e.clock.Now,
		NewID: func() string { e.ids++; return fmt.Sprintf("s%d", e.ids) }}
	if mut != nil {
		mut(&cfg)
	}
	r, err := loop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, r *loop.Runner, task string) *loop.State {
	t.Helper()
	st, err := r.Run(t.Context(), loop.Task{Prompt: task})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return st
}

func checkScript(t *testing.T, m *scripted.Model) {
	t.Helper()
	if err := m.Err(); err != nil {
		t.Fatalf("script: %v", err)
	}
}

// refold checks that the log folds to the same state the runner returned.
func refold(t *testing.T, e *env, st *loop.State) *loop.State {
	t.Helper()
	evs, err := e.log.Load(t.Context(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	back, err := loop.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(st)
	b, _ := json.Marshal(back)
	if string(a) != string(b) {
		t.Fatalf("state from the log differs from the runner's:\nrunner %s\nlog    %s", a, b)
	}
	checkSnapshots(t, evs)
	return back
}

// checkSnapshots holds the state to its snapshot property: for every k,
// restoring the snapshot taken after event k and folding the rest gives
// exactly the state the whole log folds to.
func checkSnapshots(t *testing.T, evs []loop.Event) {
	t.Helper()
	whole, err := loop.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := whole.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for k := range len(evs) + 1 {
		head, err := loop.Fold(evs[:k])
		if err != nil {
			t.Fatal(err)
		}
		snap, err := head.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		st, err := loop.RestoreState(snap)
		if err != nil {
			t.Fatalf("restore after event %d: %v", k, err)
		}
		for _, e := range evs[k:] {
			if err := st.Apply(e); err != nil {
				t.Fatalf("restored after event %d, applying %d: %v", k, e.Seq, err)
			}
		}
		got, _ := st.Snapshot()
		if string(got) != string(want) {
			t.Fatalf("restored after event %d of %d and folded the rest: differs from the whole fold\nrestored %s\nwhole    %s", k, len(evs), got, want)
		}
	}
}

func lastUserContent(req *model.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

func toolMessages(req *model.Request) []model.Message {
	var out []model.Message
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}
