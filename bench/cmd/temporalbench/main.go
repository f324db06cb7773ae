// Command temporalbench measures sessions on Temporal against the local
// runner, in the same run, on the same SQLite store and scripted model:
//
//  1. overhead: sessions of S steps (each a write_file call) run one after
//     another, locally and as workflows on a Temporal dev server with one
//     in-process worker — the time per iteration of each, and the ratio;
//
//  2. capacity: C sessions started at once on that one worker — how long
//     until all completed, and iterations/s.
//
//     go run ./bench/cmd/temporalbench [-sessions 10] [-steps 10] [-concurrent 50,200] [-out FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentloop/agentloop/assemble"
	benchresult "github.com/agentloop/agentloop/bench/internal/result"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/temporal"
	"github.com/agentloop/agentloop/temporal/temporaltest"
)

func main() {
	sessions := flag.Int("sessions", 10, "sessions run one after another, each way")
	steps := flag.Int("steps", 10, "tool-calling steps per session (plus the answer)")
	concurrent := flag.String("concurrent", "50,200", "sessions started at once on one worker")
	out := flag.String("out", benchresult.Path("temporal"), "where the result goes (overwritten); - for standard output only")
	flag.Parse()
	if err := run(*sessions, *steps, *concurrent, *out); err != nil {
		fmt.Fprintln(os.Stderr, "temporalbench:", err)
		os.Exit(1)
	}
}

func run(sessions, steps int, concurrent, out string) error {
	cli, err := temporaltest.CLI()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "temporalbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, stop, err := temporaltest.StartServer(cli, dir)
	if err != nil {
		return err
	}
	defer stop()

	st, err := sqlite.Open(filepath.Join(dir, "s.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	runner, err := loop.New((&assemble.Resolver{}).RunnerConfig(st, price.Default()))
	if err != nil {
		return err
	}
	var script strings.Builder
	script.WriteString(`{"steps":[`)
	for i := range steps {
		fmt.Fprintf(&script, `{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}]},`, i, i)
	}
	script.WriteString(`{"text":"done"}]}`)
	scriptPath := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o600); err != nil {
		return err
	}
	n := 0
	task := func() loop.Task {
		n++
		ws := filepath.Join(dir, "ws", strconv.Itoa(n))
		os.MkdirAll(ws, 0o700)
		return loop.Task{Prompt: "write the files", Model: "script:" + scriptPath, Workspace: ws, Approval: "auto", Limits: &loop.Limits{MaxIterations: steps + 5}}
	}
	ctx := context.Background()
	iters := float64(sessions * (steps + 1))

	// Local, one after another.
	t0 := time.Now()
	for range sessions {
		s, err := runner.Run(ctx, task())
		if err != nil || s.Status != loop.StatusCompleted {
			return fmt.Errorf("local session: %v %v", err, s)
		}
	}
	local := time.Since(t0)

	tc, err := client.Dial(client.Options{HostPort: addr, Logger: quiet{}})
	if err != nil {
		return err
	}
	defer tc.Close()
	w := temporal.NewWorker(tc, "bench", &temporal.Activities{Runner: runner}, worker.Options{})
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	engine := &temporal.Engine{Client: tc, Runner: runner, TaskQueue: "bench"}
	runOne := func() error {
		id, err := engine.Start(ctx, task())
		if err != nil {
			return err
		}
		s, err := engine.Wait(ctx, id)
		if err != nil || s.Status != loop.StatusCompleted {
			return fmt.Errorf("session %s: %+v %v", id, s, err)
		}
		return nil
	}
	if err := runOne(); err != nil { // warm up the worker and the server
		return err
	}
	t0 = time.Now()
	for range sessions {
		if err := runOne(); err != nil {
			return err
		}
	}
	onTemporal := time.Since(t0)

	var rows []string
	for _, f := range strings.Split(concurrent, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			return fmt.Errorf("-concurrent: %q", f)
		}
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, c)
		for range c {
			wg.Go(func() {
				if err := runOne(); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return fmt.Errorf("%d at once: %w", c, err)
		}
		d := time.Since(t0)
		rows = append(rows, fmt.Sprintf("| %d | %s | %.0f |", c, d.Round(time.Millisecond), float64(c*(steps+1))/d.Seconds()))
	}

	wr, closeOut, err := benchresult.Create(out, "Temporal benchmark")
	if err != nil {
		return err
	}
	defer closeOut()
	fmt.Fprintf(wr, "`go run ./bench/cmd/temporalbench -sessions %d -steps %d -concurrent %s` on %s/%s, %d CPUs: a Temporal dev server (`temporal server start-dev`, SQLite-backed) on loopback, one in-process worker, the agentloop SQLite store, a scripted model answering at once; every step writes a file.\n\n",
		sessions, steps, concurrent, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintln(wr, "| runner | per iteration | × local |")
	fmt.Fprintln(wr, "|---|---:|---:|")
	fmt.Fprintf(wr, "| local (baseline, same run) | %s | 1.00 |\n", (time.Duration(float64(local) / iters)).Round(time.Microsecond))
	fmt.Fprintf(wr, "| Temporal (an iteration: model and tool activities, a local bookkeeping one) | %s | %.1f |\n\n", (time.Duration(float64(onTemporal) / iters)).Round(time.Microsecond), float64(onTemporal)/float64(local))
	fmt.Fprintln(wr, "| sessions at once, one worker | all completed in | iterations/s |")
	fmt.Fprintln(wr, "|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintln(wr, r)
	}
	return nil
}

// quiet drops the SDK's log lines.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
