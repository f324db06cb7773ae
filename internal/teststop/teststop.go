// Package teststop stops the process at a named point for crash tests:
// when $AGENTLOOP_TEST_STOP_AT names the point, At writes one line to
// standard error saying so and never returns, so the test can SIGKILL
// the process exactly there. Nothing sets the variable but tests.
package teststop

import (
	"fmt"
	"os"
	"time"
)

// Env is the variable naming the point to stop at.
const Env = "AGENTLOOP_TEST_STOP_AT"

// At stops the process here, for good, when $AGENTLOOP_TEST_STOP_AT is
// point; otherwise it returns at once.
func At(point string) {
	if os.Getenv(Env) != point {
		return
	}
	fmt.Fprintf(os.Stderr, "agentloop: stopped at %s for a crash test (%s)\n", point, Env)
	for {
		time.Sleep(time.Hour) // until the test kills the process
	}
}
