package storetest

import (
	"testing"
	"time"
)

func TestHistogramQuantile(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Microsecond)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, 1000 * time.Microsecond}} {
		got := time.Duration(h.quantile(tt.q))
		if got > tt.want || float64(got) < float64(tt.want)*0.93 {
			t.Errorf("quantile(%v) = %v, want within 7%% below %v", tt.q, got, tt.want)
		}
	}
	for v := uint64(1); v < 1<<40; v = v*3 + 1 {
		if l := lower(bucket(v)); l > v || float64(l) < float64(v)*0.93 {
			t.Fatalf("value %d: bucket lower bound %d", v, l)
		}
	}
}

func TestFakeEventDeterministic(t *testing.T) {
	a, b := FakeEvents("s", 1, 12), FakeEvents("s", 1, 12)
	if !EqualEvents(a, b) {
		t.Fatal("FakeEvents is not deterministic")
	}
	if EqualEvents(a, FakeEvents("t", 1, 12)) {
		t.Fatal("FakeEvents ignores the session ID")
	}
}
