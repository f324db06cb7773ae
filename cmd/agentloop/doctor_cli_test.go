package main

import (
	"os"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/sandbox"
)

// agentloop doctor reports every backend with what the probe found; in
// CI (AGENTLOOP_SANDBOX_TESTS=1) both confining backends must work.
func TestDoctorReportsSandboxBackends(t *testing.T) {
	out, stderr, code := newCLI(t).run("", "doctor")
	for _, b := range []string{"landlock", "bwrap", "none"} {
		if !strings.Contains(out, "  "+b+" ") {
			t.Errorf("doctor does not report %s:\n%s%s", b, out, stderr)
		}
	}
	defaultWorks := sandbox.Probe(sandbox.DefaultBackend(), sandbox.NoNetwork) == nil
	if (code == 0) != defaultWorks {
		t.Errorf("doctor exited %d, the default backend works: %v\n%s", code, defaultWorks, out)
	}
	if os.Getenv("AGENTLOOP_SANDBOX_TESTS") == "1" && strings.Count(out, " works") != 2 {
		t.Errorf("AGENTLOOP_SANDBOX_TESTS=1, yet a backend does not work:\n%s", out)
	}
}
