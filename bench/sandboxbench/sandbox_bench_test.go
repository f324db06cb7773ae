// Package sandboxbench measures what the sandbox adds to each command:
// execute_command running `true` through the supervisor, per backend,
// against none in the same run.
//
//	go test ./bench/sandboxbench -run TestCommandCost -v
package sandboxbench

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/sandbox/sandboxtest"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
)

func TestMain(m *testing.M) {
	shell.Supervise()
	os.Exit(m.Run())
}

// TestCommandCost reports p50 and p99 of a trivial command per backend
// and the ratio to none; it asserts only that every command succeeded.
func TestCommandCost(t *testing.T) {
	if os.Getenv("AGENTLOOP_BENCH") != "1" {
		t.Skip("a measurement, not a test: AGENTLOOP_BENCH=1 go test -run TestCommandCost -v ./bench/sandboxbench (make bench)")
	}
	const n = 200
	dir := sandboxtest.Dir(t)
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"command": "true"})
	measure := func(p *sandbox.Policy) (p50, p99 time.Duration) {
		tl := shell.New(ws, shell.Config{Sandbox: p, MaxTrackedFiles: 10})
		d := make([]time.Duration, n)
		for i := range d {
			start := time.Now()
			res, err := tl.Call(t.Context(), args)
			d[i] = time.Since(start)
			if err != nil || res.IsError {
				t.Fatalf("command failed: %v %s", err, res.Output)
			}
		}
		slices.Sort(d)
		return d[n/2], d[n*99/100]
	}
	base50, base99 := measure(nil)
	t.Logf("none:     p50 %v  p99 %v", base50, base99)
	for _, b := range sandboxtest.Backends {
		if err := sandbox.Probe(b, sandbox.NoNetwork); err != nil {
			t.Logf("%s: skipped: %v", b, err)
			continue
		}
		p50, p99 := measure(sandboxtest.Policy(t, b, dir, sandbox.NoNetwork))
		t.Logf("%-9s p50 %v (+%v, %.2f×)  p99 %v (+%v, %.2f×)", b+":", p50, p50-base50, float64(p50)/float64(base50), p99, p99-base99, float64(p99)/float64(base99))
	}
}
