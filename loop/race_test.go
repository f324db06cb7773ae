//go:build race

package loop_test

// raceEnabled is set when the tests run under the race detector, whose
// instrumentation makes every frame larger.
const raceEnabled = true
