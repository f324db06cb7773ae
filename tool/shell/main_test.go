package shell_test

import (
	"os"
	"testing"

	"github.com/agentloop/agentloop/tool/shell"
)

// The tests run commands the way agentloop does: through the test binary
// as their supervisor (timeouts, signals, leftovers and exit codes all go
// through it).
func TestMain(m *testing.M) {
	shell.Supervise()
	os.Exit(m.Run())
}
