package transport

import (
	"context"
	"errors"
	"io"
	"mime"
	"strings"
	"testing"
	"time"
)

func newTimedBody(t *testing.T, r io.Reader, firstByte, idle time.Duration, end time.Time) (*timedBody, context.Context) {
	ctx, cancel := context.WithCancelCause(t.Context())
	t.Cleanup(func() { cancel(nil) })
	b := &timedBody{rc: r, cancel: cancel, call: Call{Provider: "p", URL: "u", Model: "m"}, firstByte: firstByte, idle: idle, end: end, total: time.Hour}
	b.timed = firstByte > 0 || idle > 0 || !end.IsZero()
	if b.timed {
		b.start = time.Now()
		b.setPhase(waitingFirstByte)
	}
	t.Cleanup(b.stop)
	return b, ctx
}

func (b *timedBody) armed() (limit string, due time.Time, timer bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit, _, due = b.deadline()
	return limit, due, b.timer != nil
}

// With no limit set, reading makes no timer; a body read to its end needs
// no drain (and so no drain timer either).
func TestTimedBodyNoLimits(t *testing.T) {
	b, ctx := newTimedBody(t, strings.NewReader("hello"), 0, 0, time.Time{})
	if _, err := io.ReadAll(b); err != nil {
		t.Fatal(err)
	}
	b.drain()
	if _, _, timer := b.armed(); timer {
		t.Error("a timer was made with no limit set")
	}
	if !b.eof || ctx.Err() != nil {
		t.Errorf("eof %v, ctx %v", b.eof, ctx.Err())
	}
}

// A body not read to its end is drained under a timer.
func TestTimedBodyDrain(t *testing.T) {
	b, _ := newTimedBody(t, strings.NewReader("rest"), 0, 0, time.Time{})
	b.drain()
	if limit, due, timer := b.armed(); !timer || limit != "" || due.IsZero() {
		t.Errorf("drain: timer %v for %q at %v", timer, limit, due)
	}
	if n, _ := b.rc.Read(make([]byte, 8)); n != 0 {
		t.Error("not drained")
	}
}

// The phases: first byte, then idle from the latest read; a firing before
// the limit has run out (a read came since) does not cancel; one after it
// cancels with the limit's error.
func TestTimedBodyPhases(t *testing.T) {
	b, ctx := newTimedBody(t, strings.NewReader("xy"), time.Hour, 2*time.Hour, time.Time{})
	if limit, due, _ := b.armed(); limit != "first-byte" || !due.Equal(b.start.Add(time.Hour)) {
		t.Fatalf("armed %q at %v", limit, due)
	}
	if _, err := b.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	limit, due, _ := b.armed()
	if limit != "idle" || due.Before(b.start.Add(2*time.Hour)) {
		t.Fatalf("armed %q at %v", limit, due)
	}
	b.fire()
	if ctx.Err() != nil {
		t.Fatal("cancelled before the limit ran out")
	}
	b.lastRead.Store(int64(-3 * time.Hour)) // the latest read long ago
	b.fire()
	var te *TimeoutError
	if !errors.As(context.Cause(ctx), &te) || te.Limit != "idle" || te.After != 2*time.Hour {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
}

// The total deadline replaces a later limit, and a stopped body never
// cancels.
func TestTimedBodyTotal(t *testing.T) {
	end := time.Now().Add(time.Minute)
	b, ctx := newTimedBody(t, strings.NewReader("x"), 2*time.Minute, time.Hour, end)
	if limit, due, _ := b.armed(); limit != "total" || !due.Equal(end) {
		t.Errorf("armed %q at %v, want total at %v", limit, due, end)
	}
	b.end = time.Now().Add(-time.Millisecond)
	b.stop()
	b.fire()
	if ctx.Err() != nil {
		t.Fatal("a stopped body cancelled the attempt")
	}
	b.done = false
	b.fire()
	var te *TimeoutError
	if !errors.As(context.Cause(ctx), &te) || te.Limit != "total" {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
}

func TestParseMediaType(t *testing.T) {
	for _, v := range []string{"", "application/json", "text/event-stream", "application/x-ndjson", "application/json; charset=utf-8",
		"text/event-stream; charset=utf-8", "Application/JSON", "text/html; charset=utf-8", "application/json; charset", "garbage;;", "text/event-stream ;charset=UTF-8"} {
		want, _, _ := mime.ParseMediaType(v)
		if got := parseMediaType(v); got != want {
			t.Errorf("parseMediaType(%q) = %q, want %q", v, got, want)
		}
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

// BenchmarkTimedBodyRead is the cost a read of the body pays for the
// limits: noting its time.
func BenchmarkTimedBodyRead(b *testing.B) {
	_, cancel := context.WithCancelCause(b.Context())
	defer cancel(nil)
	tb := &timedBody{rc: endless{}, cancel: cancel, firstByte: time.Minute, idle: time.Minute, end: time.Now().Add(time.Hour), total: time.Hour, timed: true, start: time.Now()}
	tb.setPhase(waitingFirstByte)
	defer tb.stop()
	p := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = tb.Read(p)
	}
}
