package loop_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
)

func TestDurationMarshalsAsSeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, `"0s"`},
		{1500 * time.Millisecond, `"1.5s"`},
		{352 * time.Microsecond, `"0.000352s"`},
		{30 * time.Second, `"30s"`},
		{90 * time.Minute, `"5400s"`},
		{time.Nanosecond, `"0.000000001s"`},
		{-2500 * time.Millisecond, `"-2.5s"`},
		{1234567891, `"1.234567891s"`},
		{math.MaxInt64, `"9223372036.854775807s"`},
		{math.MinInt64, `"-9223372036.854775808s"`},
	} {
		got, err := json.Marshal(loop.Duration(c.d))
		if err != nil || string(got) != c.want {
			t.Errorf("%v: got %s, %v; want %s", c.d, got, err, c.want)
			continue
		}
		// Both readers the wire form promises: Go's ParseDuration gives the
		// exact value back, and parseFloat's reading (the digits before
		// the "s") is the value in seconds.
		s := strings.Trim(string(got), `"`)
		if back, err := time.ParseDuration(s); err != nil || back != c.d {
			t.Errorf("%s: ParseDuration gives %v, %v; want %v", s, back, err, c.d)
		}
		if f, err := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64); err != nil || f != c.d.Seconds() {
			t.Errorf("%s: as a float %v, %v; want %v", s, f, err, c.d.Seconds())
		}
		if c.d.Abs() < 1<<53 && s != strconv.FormatFloat(c.d.Seconds(), 'f', -1, 64)+"s" {
			t.Errorf("%s differs from FormatFloat's %s", s, strconv.FormatFloat(c.d.Seconds(), 'f', -1, 64))
		}
	}
}

func TestDurationReadsEveryForm(t *testing.T) {
	for in, want := range map[string]time.Duration{
		`"1.5s"`:      1500 * time.Millisecond,
		`"0.000352s"`: 352 * time.Microsecond,
		`"1m30s"`:     90 * time.Second,
		`"250ms"`:     250 * time.Millisecond,
		`"0"`:         0,
		`1500000000`:  1500 * time.Millisecond, // legacy nanoseconds
		`0`:           0,
		`-5`:          -5,
		`1.5e9`:       1500 * time.Millisecond,
		` 42 `:        42,
	} {
		var d loop.Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.Std() != want {
			t.Errorf("%s: got %v, %v; want %v", in, d, err, want)
		}
	}
	d := loop.Duration(time.Second)
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d.Std() != time.Second {
		t.Errorf("null changed the duration: %v, %v", d, err)
	}
	for _, bad := range []string{`"soon"`, `"30"`, `true`, `{}`, `1e300`, `"1.5 s"`} {
		var d loop.Duration
		err := json.Unmarshal([]byte(bad), &d)
		if err == nil {
			t.Errorf("%s: read as %v, want an error", bad, d)
		} else if !strings.Contains(err.Error(), "duration") {
			t.Errorf("%s: error %q does not say it is about a duration", bad, err)
		}
	}
}

// Logs written before loop.Duration recorded limits as nanoseconds, and
// states printed then (sessions show --json, GET /v1/sessions/{id}) carried
// nanosecond durations. Both still read, with the same durations, and are
// written back in seconds.
func TestOldNanosecondLogsReadTheSame(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	// session.started as stored by the previous build, byte for byte.
	started := `{"task":"fix it","mode":"tools","limits":{"max_iterations":12,"timeout":600000000000,"model_call_timeout":60000000000,"tool_call_timeout":30000000000,"budget_tokens":100000}}`
	e, err := loop.DecodeEvent("s1", 1, loop.TypeSessionStarted, 1, at, []byte(started))
	if err != nil {
		t.Fatal(err)
	}
	l := e.Data.(*loop.SessionStarted).Limits
	if l.Timeout.Std() != 10*time.Minute || l.ModelCallTimeout.Std() != time.Minute || l.ToolCallTimeout.Std() != 30*time.Second {
		t.Fatalf("old limits read as %+v", l)
	}
	again, err := e.EncodeData()
	if err != nil {
		t.Fatal(err)
	}
	if want := `"limits":{"max_iterations":12,"timeout":"600s","model_call_timeout":"60s","tool_call_timeout":"30s","budget_tokens":100000}`; !strings.Contains(string(again), want) {
		t.Errorf("re-encoded as %s, want it to contain %s", again, want)
	}

	// A state as the previous build printed it.
	old := `{"id":"s1","task":"fix it","mode":"tools","status":"completed","limits":{"max_iterations":12,"timeout":600000000000},
		"max_iterations":12,"duration":2500000000,"seq":9,
		"iterations":[{"number":1,"status":"completed","duration":1500000000,"messages":[],"usage":{},
			"tool_calls":[{"id":"c1","tool_name":"shell","input":{},"status":"success","duration":352000}]}]}`
	var st loop.State
	if err := json.Unmarshal([]byte(old), &st); err != nil {
		t.Fatal(err)
	}
	if st.Duration.Std() != 2500*time.Millisecond || st.Limits.Timeout.Std() != 10*time.Minute ||
		st.Iterations[0].Duration.Std() != 1500*time.Millisecond || st.Iterations[0].ToolCalls[0].Duration.Std() != 352*time.Microsecond {
		t.Fatalf("old state read as duration %v, timeout %v, step %v, call %v", st.Duration, st.Limits.Timeout, st.Iterations[0].Duration, st.Iterations[0].ToolCalls[0].Duration)
	}
	now, err := json.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"duration":"2.5s"`, `"timeout":"600s"`, `"duration":"1.5s"`, `"duration":"0.000352s"`} {
		if !strings.Contains(string(now), want) {
			t.Errorf("the state written again lacks %s: %s", want, now)
		}
	}
}

// A log folded to a state shows its durations in seconds; folding the same
// events stored the old way gives equal states.
func TestFoldedDurationsAreSeconds(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	st := &loop.State{Header: loop.Header{Status: loop.StatusIdle}}
	events := []loop.Payload{
		&loop.SessionStarted{Task: "t", Mode: loop.ModeTools, Limits: loop.Limits{MaxIterations: 3, ToolCallTimeout: loop.Duration(45 * time.Second)}},
		&loop.IterationStarted{N: 1},
		&loop.ToolStarted{Iteration: 1, CallID: "c1", Name: "shell", Input: json.RawMessage(`{}`)},
		&loop.ToolFinished{Iteration: 1, CallID: "c1", Name: "shell", Output: "ok", DurationMS: 1250},
		&loop.IterationEnded{N: 1, Status: loop.IterationCompleted},
	}
	for i, p := range events {
		if err := st.Apply(loop.NewEvent("s1", int64(i+1), at.Add(time.Duration(i)*time.Second), p)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"tool_call_timeout":"45s"`, `"duration":"1.25s"`, `"duration":"3s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("state lacks %s: %s", want, b)
		}
	}
}
