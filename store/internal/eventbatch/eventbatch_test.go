package eventbatch

import (
	"testing"
	"time"
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
