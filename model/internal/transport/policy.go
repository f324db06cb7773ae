// Package transport is the HTTP plumbing shared by the model providers:
// one POST per attempt, retries with backoff that honour Retry-After, the
// connect / first-byte / idle / total time limits, and errors that name the
// provider, the URL and the model.
package transport

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Timeouts bound one model call. Zero fields take the defaults below; a
// negative field disables that limit.
type Timeouts struct {
	// Connect bounds dialing and the TLS handshake (default 10s). It is only
	// enforced on the HTTP client the provider builds itself, not on a
	// caller-supplied *http.Client.
	Connect time.Duration
	// FirstByte bounds the wait from sending the request to the first byte
	// of the response body: for a stream, the first event; for a
	// non-streaming call, the whole generation (default 5m, generous for
	// local models that load weights first).
	FirstByte time.Duration
	// Idle bounds the silence between two reads of the response body once
	// it has started (default 2m).
	Idle time.Duration
	// Total bounds the whole call, every attempt and backoff included
	// (default 15m).
	Total time.Duration
}

// DefaultTimeouts are used for zero fields of Timeouts.
var DefaultTimeouts = Timeouts{
	Connect:   10 * time.Second,
	FirstByte: 5 * time.Minute,
	Idle:      2 * time.Minute,
	Total:     15 * time.Minute,
}

func (t Timeouts) withDefaults() Timeouts {
	def := func(v, d time.Duration) time.Duration {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	return Timeouts{
		Connect:   def(t.Connect, DefaultTimeouts.Connect),
		FirstByte: def(t.FirstByte, DefaultTimeouts.FirstByte),
		Idle:      def(t.Idle, DefaultTimeouts.Idle),
		Total:     def(t.Total, DefaultTimeouts.Total),
	}
}

// Retry is the policy for 408, 409, 429, 5xx and network failures. Waits
// use exponential backoff with full jitter, or the server's Retry-After when
// it sends one. Zero fields take defaults.
type Retry struct {
	// MaxAttempts counts the first try (default 4; 1 disables retries).
	MaxAttempts int
	// BaseDelay is the backoff cap of the first retry, doubled per retry
	// (default 500ms).
	BaseDelay time.Duration
	// MaxDelay caps a computed backoff (default 30s).
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the client will wait for; a
	// longer one ends the call at once with a *model.RetryableError carrying
	// the hint, so the caller can pause instead of blocking (default 2m).
	MaxRetryAfter time.Duration

	// Sleep, Now and Rand are injected by tests. Sleep must return early
	// with ctx.Err() when ctx ends. Rand returns a number in [0, 1).
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
	Rand  func() float64
}

func (r Retry) withDefaults() Retry {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 4
	}
	if r.BaseDelay <= 0 {
		r.BaseDelay = 500 * time.Millisecond
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = 30 * time.Second
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = 2 * time.Minute
	}
	if r.Sleep == nil {
		r.Sleep = sleep
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Rand == nil {
		r.Rand = rand.Float64
	}
	return r
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff is the wait before retry number n (1 for the first retry).
func (r Retry) backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	ceil := r.BaseDelay
	for i := 1; i < n && ceil < r.MaxDelay; i++ {
		ceil *= 2
	}
	ceil = min(ceil, r.MaxDelay)
	return time.Duration(r.Rand() * float64(ceil))
}

// retryableStatus reports whether an HTTP status is worth retrying.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// parseRetryAfter reads Retry-After (seconds or an HTTP date) and the
// retry-after-ms header some OpenAI-compatible servers send.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
