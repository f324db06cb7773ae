package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Duration is a time.Duration whose JSON form is a string of seconds with
// an "s" suffix: "1.5s", "0.000352s", "30s". Go's time.ParseDuration and
// JavaScript's parseFloat both read it.
//
// Unmarshalling accepts that form, any Go duration string ("1m30s"), and a
// bare JSON number read as nanoseconds: the form logs and snapshots
// recorded before this type existed, which SQLite and PostgreSQL still
// hold.
type Duration time.Duration

// Std is d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String is time.Duration's form, e.g. "1m30s", for people to read.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a quoted string of seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, 24), '"')
	b = d.appendSeconds(b)
	return append(b, '"'), nil
}

// appendSeconds writes d in seconds with exactly the nanoseconds it holds:
// the same digits as strconv.FormatFloat(d.Seconds(), 'f', -1, 64) for
// every duration a float holds exactly, and no rounding for longer ones.
func (d Duration) appendSeconds(b []byte) []byte {
	n := int64(d)
	if n < 0 {
		b = append(b, '-')
	}
	// Dividing before negating keeps math.MinInt64 in range.
	whole, frac := n/int64(time.Second), n%int64(time.Second)
	if n < 0 {
		whole, frac = -whole, -frac
	}
	b = strconv.AppendUint(b, uint64(whole), 10)
	if frac != 0 {
		digits := strconv.AppendInt(nil, frac+int64(time.Second), 10)[1:] // nine digits, leading zeros kept
		b = append(b, '.')
		b = append(b, bytes.TrimRight(digits, "0")...)
	}
	return append(b, 's')
}

// UnmarshalJSON reads a duration string ("1.5s", "1m30s") or a bare number
// of nanoseconds (the legacy form). null leaves d as it is.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return fmt.Errorf("duration: empty JSON value")
	case string(b) == "null":
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("duration: %w", err)
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want seconds such as \"1.5s\" or a Go duration such as \"1m30s\"", s)
		}
		*d = Duration(v)
		return nil
	}
	// A bare number is nanoseconds, as time.Duration was written before.
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*d = Duration(n)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return fmt.Errorf("duration %s: want a string such as \"1.5s\" or a number of nanoseconds", b)
	}
	*d = Duration(math.Round(f))
	return nil
}
