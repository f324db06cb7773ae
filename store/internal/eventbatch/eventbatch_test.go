package eventbatch

import (
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
)

// Frames read back what was written, and anything else is refused.
func TestFrames(t *testing.T) {
	var b []byte
	b = AppendFrame(b, "tool.finished", 2, ZeroTime, []byte(`{"output":"a\nb"}`))
	b = AppendFrame(b, "x", 1, 42, []byte(`{}`))
	f, rest, err := Next(b)
	if err != nil || string(f.Type) != "tool.finished" || f.Version != 2 || f.At != ZeroTime || string(f.Payload) != `{"output":"a\nb"}` {
		t.Fatalf("first frame: %+v %v", f, err)
	}
	if f, rest, err = Next(rest); err != nil || string(f.Type) != "x" || f.At != 42 || string(f.Payload) != `{}` || len(rest) != 0 {
		t.Fatalf("second frame: %+v %q %v", f, rest, err)
	}
	for _, bad := range []string{"", "x 1 2\n{}\n", "x 1 2 3\n{}\n", "x 1 2 2\n{}", "x 1 2 2\n{}}", " 1 2 2\n{}\n", "x a 2 2\n{}\n", "x 1 2 -1\n\n", "x 1 2 2 {}\n"} {
		if _, _, err := Next([]byte(bad)); err == nil {
			t.Errorf("frame %q was accepted", bad)
		}
	}
}

// Each walks a batch's events with their sequence numbers and refuses a
// batch holding fewer or more events than its range says.
func TestEach(t *testing.T) {
	b := AppendFrame(AppendFrame(nil, "a", 1, 1, []byte(`1`)), "b", 1, 2, []byte(`2`))
	var seqs []int64
	if err := Each(4, 5, b, func(seq int64, f Frame) error { seqs = append(seqs, seq); return nil }); err != nil || len(seqs) != 2 || seqs[0] != 4 || seqs[1] != 5 {
		t.Fatalf("Each: %v %v", seqs, err)
	}
	if err := Each(4, 6, b, func(int64, Frame) error { return nil }); err == nil {
		t.Error("a batch of 2 events read as 3")
	}
	if err := Each(4, 4, b, func(int64, Frame) error { return nil }); err == nil {
		t.Error("a batch of 2 events read as 1")
	}
}

// Stored times keep nanoseconds, and the zero time survives.
func TestTimes(t *testing.T) {
	at := time.Date(2026, 11, 29, 16, 0, 0, 123456789, time.UTC)
	if got := Time(UnixNano(at)); !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("time %v read back as %v", at, got)
	}
	if got := Time(UnixNano(time.Time{})); !got.IsZero() {
		t.Errorf("zero time read back as %v", got)
	}
}

// A run's events read back in order; a batch out of order, or an event
// that does not decode, is refused with what is wrong.
func TestDecode(t *testing.T) {
	at := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	run := []loop.Event{
		loop.NewEvent("s", 3, at, &loop.IterationStarted{N: 1}),
		loop.NewEvent("s", 4, at.Add(time.Second), &loop.Warning{Code: "x", Message: "hi"}),
	}
	payloads := make([][]byte, len(run))
	for i, e := range run {
		var err error
		if payloads[i], err = e.EncodeData(); err != nil {
			t.Fatal(err)
		}
	}
	b := AppendRun(nil, run, payloads, UnixNano)
	got, err := Decode(nil, "s", 2, 3, 4, b)
	if err != nil || len(got) != 2 || got[0].Seq != 3 || got[1].Seq != 4 || !got[1].Time.Equal(at.Add(time.Second)) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	if got, err := Decode(nil, "s", 3, 3, 4, b); err != nil || len(got) != 1 || got[0].Seq != 4 {
		t.Fatalf("after 3: %+v, %v", got, err)
	}
	if _, err := Decode(nil, "s", 0, 3, 4, b); err == nil || !strings.Contains(err.Error(), "stored log is corrupt: event 3 where 1 was expected") {
		t.Fatalf("a batch after a gap: %v", err)
	}
	bad := AppendFrame(nil, "iteration.started", 1, 0, []byte(`{"n":"one"}`))
	if _, err := Decode(nil, "s", 0, 1, 1, bad); err == nil || !strings.Contains(err.Error(), "event 1 (iteration.started)") || strings.Contains(err.Error(), "stored log is corrupt") {
		t.Fatalf("an event that does not decode, said as the decoder says it: %v", err)
	}
}
