package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	memstore "github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/memory"
)

// session runs one session of the scripted model with the memory tools, on
// the real runner and the in-memory store, and returns the final state, the
// state folded from the stored log (each event round-tripped through JSON),
// and the tool results the model saw, in order.
func session(t *testing.T, steps ...scripted.Step) (st, folded *loop.State, results []model.Message, m *scripted.Model) {
	t.Helper()
	m = scripted.Replies(append(steps, scripted.Text("done"))...)
	reg, err := tool.NewRegistry(memory.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	r, err := loop.New(loop.Config{Model: m, ModelName: "test-model", Tools: reg, Log: store})
	if err != nil {
		t.Fatal(err)
	}
	st, err = r.Run(t.Context(), loop.Task{Prompt: "task"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Err(); err != nil {
		t.Fatalf("script: %v", err)
	}
	if st.Status != loop.StatusCompleted {
		t.Fatalf("status %s (%s: %s)", st.Status, st.Reason, st.Detail)
	}
	evs, err := store.Load(t.Context(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	folded, err = loop.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	for _, msg := range reqs[len(reqs)-1].Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg)
		}
	}
	return st, folded, results, m
}

func outputs(results []model.Message) []string {
	out := make([]string, len(results))
	for i, r := range results {
		out[i] = r.Content
	}
	return out
}

func mem(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

func TestSpecs(t *testing.T) {
	want := []string{"remember", "recall", "forget", "list_memory"}
	tools := memory.Tools()
	if len(tools) != len(want) {
		t.Fatalf("%d tools, want %d", len(tools), len(want))
	}
	for i, tl := range tools {
		spec := tl.Spec()
		if spec.Name != want[i] || spec.Description == "" {
			t.Errorf("tool %d: %+v", i, spec)
		}
		var s struct {
			AdditionalProperties *bool `json:"additionalProperties"`
		}
		if err := json.Unmarshal(spec.Parameters, &s); err != nil || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: schema must set additionalProperties:false: %s", spec.Name, spec.Parameters)
		}
		if tool.EffectOf(tl) != tool.EffectRead || !tool.IsIdempotent(tl) {
			t.Errorf("%s: effect %s idempotent %v, want read, true", spec.Name, tool.EffectOf(tl), tool.IsIdempotent(tl))
		}
		if _, ok := tl.(loop.SessionTool); !ok {
			t.Errorf("%s is not a loop.SessionTool", spec.Name)
		}
		if _, err := tl.Call(context.Background(), json.RawMessage(`{}`)); err == nil {
			t.Errorf("%s: Call outside a session should fail", spec.Name)
		}
	}
}

func TestRememberRecallForgetList(t *testing.T) {
	st, folded, results, _ := session(t,
		scripted.Call("list_memory", `{}`),
		scripted.Calls(
			scripted.Call("remember", `{"key":"branch","value":"fix-retry"}`),
			scripted.Call("remember", `{"key":"files.touched","value":["a.go", "b.go"]}`),
			scripted.Call("remember", `{"key":"tests","value":{"passed": 12, "failed": 1}}`),
		),
		scripted.Call("recall", `{"key":"files.touched"}`),
		scripted.Call("remember", `{"key":"tests","value":{"passed":13,"failed":0}}`),
		scripted.Call("remember", `{"key":"tests","value":{"passed":13,"failed":0}}`),
		scripted.Call("forget", `{"key":"branch"}`),
		scripted.Call("list_memory", `{}`),
	)
	want := []string{
		"Memory is empty.",
		`Remembered "branch" (11 bytes).`,
		`Remembered "files.touched" (15 bytes).`,
		`Remembered "tests" (24 bytes).`,
		`["a.go","b.go"]`,
		`Replaced the value of "tests" (was 24 bytes: {"passed":12,"failed":1}; now 24 bytes).`,
		`"tests" already holds this value; nothing changed.`,
		`Forgot "branch".`,
		"2 of 100 keys used:\n- files.touched (15 bytes): [\"a.go\",\"b.go\"]\n- tests (24 bytes): {\"passed\":13,\"failed\":0}",
	}
	if got := outputs(results); !reflect.DeepEqual(got, want) {
		t.Errorf("results:\n got %q\nwant %q", got, want)
	}
	for _, r := range results {
		if r.IsError {
			t.Errorf("unexpected error result %q", r.Content)
		}
	}
	wantMem := mem("files.touched", `["a.go","b.go"]`, "tests", `{"passed":13,"failed":0}`)
	if !reflect.DeepEqual(folded.Memory, wantMem) {
		t.Errorf("memory folded from the log = %s, want %s", show(folded.Memory), show(wantMem))
	}
	if !reflect.DeepEqual(st.Memory, wantMem) {
		t.Errorf("runner's memory = %s, want %s", show(st.Memory), show(wantMem))
	}
}

func show(m map[string]json.RawMessage) string {
	b, _ := json.Marshal(m)
	return string(b)
}

func TestErrors(t *testing.T) {
	big := `"` + strings.Repeat("x", memory.MaxValueBytes) + `"` // 2 bytes over
	tests := []struct {
		name  string
		setup []scripted.Step
		call  scripted.Step
		want  string
	}{
		{"recall from empty memory", nil, scripted.Call("recall", `{"key":"x"}`),
			`recall: nothing is stored under "x"; memory is empty`},
		{"recall a missing key", []scripted.Step{scripted.Call("remember", `{"key":"b","value":1}`), scripted.Call("remember", `{"key":"a","value":2}`)},
			scripted.Call("recall", `{"key":"c"}`),
			`recall: nothing is stored under "c"; the keys are: a, b`},
		{"forget a missing key", []scripted.Step{scripted.Call("remember", `{"key":"a","value":2}`)},
			scripted.Call("forget", `{"key":"z"}`),
			`forget: nothing is stored under "z"; the keys are: a`},
		{"empty key", nil, scripted.Call("remember", `{"key":"","value":1}`),
			"remember: key is empty; use 1 to 64 characters from A-Z, a-z, 0-9, _ . -"},
		{"key with a space", nil, scripted.Call("recall", `{"key":"my key"}`),
			`recall: key "my key" has the character ' '; use 1 to 64 characters from A-Z, a-z, 0-9, _ . -`},
		{"key with a slash", nil, scripted.Call("forget", `{"key":"a/b"}`),
			`forget: key "a/b" has the character '/'; use 1 to 64 characters from A-Z, a-z, 0-9, _ . -`},
		{"key too long", nil, scripted.Call("remember", `{"key":"`+strings.Repeat("k", 65)+`","value":1}`),
			`remember: key "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk…" is 65 characters long; use 1 to 64 characters from A-Z, a-z, 0-9, _ . -`},
		{"null value", nil, scripted.Call("remember", `{"key":"a","value":null}`),
			`remember: value is missing or null; give the value to store, or use forget to remove "a"`},
		{"value too large", nil, scripted.Call("remember", `{"key":"blob","value":`+big+`}`),
			`remember: the value for "blob" is 16386 bytes as compact JSON; the limit is 16384 bytes (16 KiB), so store a summary or split it under several keys`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, folded, results, _ := session(t, scripted.Calls(append(tc.setup, tc.call)...))
			last := results[len(results)-1]
			if last.Content != "error: "+tc.want || !last.IsError {
				t.Errorf("result:\n got %q (error %v)\nwant %q", last.Content, last.IsError, "error: "+tc.want)
			}
			if len(folded.Memory) != len(tc.setup) {
				t.Errorf("memory has %d keys, want %d: a refused call must change nothing", len(folded.Memory), len(tc.setup))
			}
		})
	}
}

func TestValueLimitIsExact(t *testing.T) {
	exact := `"` + strings.Repeat("x", memory.MaxValueBytes-2) + `"`
	_, folded, results, _ := session(t, scripted.Call("remember", `{"key":"blob","value":`+exact+`}`))
	if results[0].IsError || len(folded.Memory["blob"]) != memory.MaxValueBytes {
		t.Errorf("a value of exactly %d bytes should be stored: %q", memory.MaxValueBytes, results[0].Content[:min(80, len(results[0].Content))])
	}
}

func TestKeyLimit(t *testing.T) {
	var calls []scripted.Step
	for i := range memory.MaxKeys {
		calls = append(calls, scripted.Call("remember", fmt.Sprintf(`{"key":"k%d","value":%d}`, i, i)))
	}
	calls = append(calls,
		scripted.Call("remember", `{"key":"one-more","value":1}`),
		scripted.Call("remember", `{"key":"k7","value":"replaced"}`), // replacing still works
	)
	_, folded, results, _ := session(t, scripted.Calls(calls...))
	if got := results[len(results)-2].Content; got != "error: remember: memory is full (100 keys); forget keys you no longer need, or replace one" {
		t.Errorf("over the key limit: %q", got)
	}
	if results[len(results)-1].IsError || string(folded.Memory["k7"]) != `"replaced"` || len(folded.Memory) != memory.MaxKeys {
		t.Errorf("replace at the limit: %q; memory has %d keys", results[len(results)-1].Content, len(folded.Memory))
	}
}

// Memory survives a pause: a resumed session still recalls what it stored.
func TestMemoryAcrossResume(t *testing.T) {
	m := scripted.Replies(
		scripted.Call("remember", `{"key":"answer","value":42}`),
		scripted.Call("recall", `{"key":"answer"}`),
		scripted.Text("42"),
	)
	reg := tool.MustRegistry(memory.Tools()...)
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	cfg := loop.Config{Model: m, Tools: reg, Log: store, Stop: pauseAfterFirstIteration{}}
	r, err := loop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Run(t.Context(), loop.Task{Prompt: "task"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusPaused {
		t.Fatalf("status %s, want paused", st.Status)
	}
	// A fresh runner on the same store: everything comes from the log.
	cfg.Stop = nil
	r2, err := loop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := r2.Resume(t.Context(), st.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err = s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	last := reqs[2].Messages[len(reqs[2].Messages)-1]
	if st.Status != loop.StatusCompleted || last.Content != "42" || last.IsError {
		t.Errorf("status %s; recall after resume gave %q", st.Status, last.Content)
	}
}

// pauseAfterFirstIteration pauses the session once, after iteration 1.
type pauseAfterFirstIteration struct{}

func (pauseAfterFirstIteration) Check(st *loop.State, _ time.Time) loop.Decision {
	if st.CurrentIteration == 1 {
		return loop.Decision{Action: loop.Pause, Reason: loop.ReasonUser, Detail: "test pause"}
	}
	return loop.Decision{}
}

// Values are kept as the log stores them, so the runner's state and the
// state folded from the log agree byte for byte; the model still reads
// <, > and & as written.
func TestHTMLCharactersRoundTrip(t *testing.T) {
	st, folded, results, _ := session(t,
		scripted.Call("remember", `{"key":"html","value":{"tag":"<b>&amp;</b>","lit":"\\u003c"}}`),
		scripted.Call("recall", `{"key":"html"}`),
		scripted.Call("remember", `{"key":"html","value":{"tag":"<b>&amp;</b>", "lit":"\\u003c"}}`),
		scripted.Call("list_memory", `{}`),
	)
	if !reflect.DeepEqual(st.Memory, folded.Memory) {
		t.Errorf("runner's memory %s differs from the folded log's %s", show(st.Memory), show(folded.Memory))
	}
	got := outputs(results)
	if want := `{"tag":"<b>&amp;</b>","lit":"\\u003c"}`; got[1] != want {
		t.Errorf("recall = %s, want %s", got[1], want)
	}
	if got[2] != `"html" already holds this value; nothing changed.` {
		t.Errorf("remembering the same value again: %q", got[2])
	}
	if !strings.Contains(got[3], `- html (`) || !strings.Contains(got[3], `{"tag":"<b>&amp;</b>","lit":"\\u003c"}`) {
		t.Errorf("list_memory = %q", got[3])
	}
	var v any
	if err := json.Unmarshal([]byte(got[1]), &v); err != nil {
		t.Errorf("recall output is not valid JSON: %v", err)
	}
}
