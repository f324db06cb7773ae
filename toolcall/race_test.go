//go:build race

package toolcall

// raceEnabled shortens the 1 MB linear-work runs under the race detector,
// which slows every memory access; the 10 kB → 100 kB step still catches
// quadratic behaviour.
const raceEnabled = true
