package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimit bounds the requests one API key may make: Per requests a
// second on average, Burst at once. Zero Per means no limit.
type RateLimit struct {
	Per   float64
	Burst int
}

// keyLimiters holds a token bucket per key, made on the key's first request.
type keyLimiters struct {
	mu sync.Mutex
	by map[string]*rate.Limiter
}

// allow says whether the key may make a request now, and if not, how long
// until it may.
func (l *keyLimiters) allow(rl RateLimit, keyID string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	lim, ok := l.by[keyID]
	if !ok {
		if l.by == nil {
			l.by = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(rate.Limit(rl.Per), max(rl.Burst, 1))
		l.by[keyID] = lim
	}
	l.mu.Unlock()
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused request spends nothing
		return false, d
	}
	return true, 0
}

// limited answers 429 for a key over its rate.
func limited(w http.ResponseWriter, keyID string, rl RateLimit, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	problem(w, http.StatusTooManyRequests, fmt.Sprintf("API key %s went over its limit of %g requests a second (bursts of %d); wait %s and slow down, or ask for a higher --rate-limit",
		keyID, rl.Per, max(rl.Burst, 1), wait.Round(time.Millisecond)))
}
