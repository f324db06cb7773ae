// Command loopbench prints the runtime overhead of the agent loop and its
// scale: per-iteration time and allocations with an in-memory log and with
// SQLite (ratio in the same run), and heap per session with 10,000
// sessions waiting on a slow model at once.
//
//	go run ./bench/cmd/loopbench [-sessions 2000] [-concurrent 10000] [-latency 100ms]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	benchresult "github.com/agentloop/agentloop/bench/internal/result"
	"github.com/agentloop/agentloop/bench/loopbench"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/store/sqlite"
)

// stdout is where the result is printed: standard output and the
// result's file.
var stdout io.Writer = os.Stdout

func main() {
	sessions := flag.Int("sessions", 2000, "sequential sessions per store for the overhead measurement")
	rounds := flag.Int("rounds", 3, "rounds, interleaving the stores")
	concurrent := flag.Int("concurrent", 10000, "sessions at once for the scale measurement (0 skips it)")
	latency := flag.Duration("latency", 100*time.Millisecond, "scripted model latency per call in the scale measurement")
	outPath := flag.String("out", benchresult.Path("loop"), "where the result goes (overwritten); - for standard output only")
	flag.Parse()
	w, closeOut, err := benchresult.Create(*outPath, "Loop overhead and scale")
	if err != nil {
		fmt.Fprintln(os.Stderr, "loopbench:", err)
		os.Exit(1)
	}
	defer closeOut()
	stdout = w
	if err := run(*sessions, *rounds, *concurrent, *latency); err != nil {
		fmt.Fprintln(os.Stderr, "loopbench:", err)
		os.Exit(1)
	}
}

type result struct {
	nsPerIter, allocsPerIter, bytesPerIter float64
}

func run(sessions, rounds, concurrent int, latency time.Duration) error {
	dir, err := os.MkdirTemp("", "loopbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(stdout, "agentloop loop overhead: %d sessions × %d iterations per store per round, %d rounds, GOMAXPROCS=%d, %s\n\n",
		sessions, loopbench.K+1, rounds, runtime.GOMAXPROCS(0), runtime.Version())
	res := map[string][]result{}
	names := []string{"memory", "sqlite", "sqlite+service"}
	for r := range rounds {
		for _, name := range names {
			var log loop.Log
			var closer func()
			var svc *service.Service
			switch name {
			case "memory":
				log, closer = memory.New(), func() {}
			default:
				st, err := sqlite.Open(filepath.Join(dir, fmt.Sprintf("r%d-%s.db", r, name)))
				if err != nil {
					return err
				}
				log, closer = st, func() { st.Close() }
				if name == "sqlite+service" {
					// Through the control API: a lease per session and
					// every append fenced by it.
					cfg := loopbench.Config(nil, nil)
					cfg.Model, cfg.Resolve = nil, loopbench.Resolver(loopbench.Script())
					if svc, err = service.New(service.Config{Store: st, Runner: cfg}); err != nil {
						return err
					}
					closer = func() { svc.Close(); st.Close() }
				}
			}
			x, err := sequential(log, svc, sessions)
			closer()
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			res[name] = append(res[name], x)
		}
	}
	fmt.Fprintln(stdout, "| store | ns/iteration (min / median / max) | allocs/iteration | bytes/iteration | time vs memory |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|")
	memMed := median(res["memory"], func(r result) float64 { return r.nsPerIter })
	for _, name := range names {
		rs := res[name]
		ns := func(r result) float64 { return r.nsPerIter }
		fmt.Fprintf(stdout, "| %s | %.0f / %.0f / %.0f | %.0f | %.0f | %.2f× |\n", name, minOf(rs, ns), median(rs, ns), maxOf(rs, ns),
			median(rs, func(r result) float64 { return r.allocsPerIter }), median(rs, func(r result) float64 { return r.bytesPerIter }),
			median(rs, ns)/memMed)
	}
	if concurrent > 0 {
		if err := scale(dir, concurrent, latency); err != nil {
			return err
		}
	}
	return nil
}

// sequential runs sessions one after another and measures per iteration.
func sequential(log loop.Log, svc *service.Service, n int) (result, error) {
	script := loopbench.Script()
	ctx := context.Background()
	once := func(ctx context.Context, log loop.Log, script *scripted.Script) error {
		if svc != nil {
			return onceService(ctx, svc)
		}
		return once(ctx, log, script)
	}
	// Warm up.
	for range 20 {
		if err := once(ctx, log, script); err != nil {
			return result{}, err
		}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range n {
		if err := once(ctx, log, script); err != nil {
			return result{}, err
		}
	}
	el := time.Since(start)
	runtime.ReadMemStats(&after)
	iters := float64(n * (loopbench.K + 1))
	return result{
		nsPerIter:     float64(el.Nanoseconds()) / iters,
		allocsPerIter: float64(after.Mallocs-before.Mallocs) / iters,
		bytesPerIter:  float64(after.TotalAlloc-before.TotalAlloc) / iters,
	}, nil
}

func once(ctx context.Context, log loop.Log, script *scripted.Script) error {
	r, err := loopbench.Runner(scripted.NewCompact(script), log)
	if err != nil {
		return err
	}
	st, err := r.Run(ctx, loop.Task{Prompt: "add the numbers"})
	if err != nil {
		return err
	}
	return loopbench.Check(st)
}

func onceService(ctx context.Context, svc *service.Service) error {
	started, err := svc.Start(ctx, service.Local("bench"), loop.Task{Prompt: "add the numbers"})
	if err != nil {
		return err
	}
	st, err := started.Session.Wait(ctx)
	if err != nil {
		return err
	}
	return loopbench.Check(st)
}

// scale measures, with n sessions at once: the heap and goroutines per
// session while all of them wait on their model, then the throughput when
// the model takes latency per call.
func scale(dir string, n int, latency time.Duration) error {
	fmt.Fprintf(stdout, "\nscale: %d concurrent sessions, model latency %s, %d model calls each\n\n", n, latency, loopbench.K+1)
	fmt.Fprintln(stdout, "| store | heap per waiting session | stack per waiting session | goroutines per session | wall for all sessions (ideal) | sessions/s | iterations/s |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|")
	for _, name := range []string{"memory", "sqlite"} {
		var log loop.Log
		var closer func()
		if name == "memory" {
			log, closer = memory.New(), func() {}
		} else {
			st, err := sqlite.Open(filepath.Join(dir, "scale.db"))
			if err != nil {
				return err
			}
			log, closer = st, func() { st.Close() }
		}
		base := loopbench.Script()
		withDelay := func(first, rest time.Duration) *scripted.Script {
			s := &scripted.Script{Name: base.Name}
			for i, st := range base.Steps {
				d := rest
				if i == 0 {
					d = first
				}
				s.Steps = append(s.Steps, st.WithDelay(d))
			}
			return s
		}
		ctx := context.Background()

		// 1. Everyone waiting: the first reply never comes until terminated.
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		g0 := runtime.NumGoroutine()
		held, err := startAll(ctx, log, withDelay(time.Hour, 0), n)
		if err != nil {
			return err
		}
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		goroutines := runtime.NumGoroutine() - g0
		for _, s := range held {
			s.Terminate("benchmark: measured")
		}
		for _, s := range held {
			if _, err := s.Wait(ctx); err != nil {
				return err
			}
		}
		heap := (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(n)
		stack := (float64(m1.StackInuse) - float64(m0.StackInuse)) / float64(n)

		// 2. Throughput.
		start := time.Now()
		sessions, err := startAll(ctx, log, withDelay(latency, latency), n)
		if err != nil {
			return err
		}
		for _, s := range sessions {
			st, err := s.Wait(ctx)
			if err == nil {
				err = loopbench.Check(st)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		el := time.Since(start)
		closer()
		ideal := latency * time.Duration(loopbench.K+1)
		fmt.Fprintf(stdout, "| %s | %.1f KiB | %.1f KiB | %.2f | %s (%s, %.2f×) | %.0f | %.0f |\n", name, heap/1024, stack/1024, float64(goroutines)/float64(n),
			el.Round(time.Millisecond), ideal, float64(el)/float64(ideal), float64(n)/el.Seconds(), float64(n*(loopbench.K+1))/el.Seconds())
	}
	return nil
}

// startAll starts n sessions from many goroutines, as a server's handlers
// would: Start returns once session.started is durable, and concurrent
// starts share commits.
func startAll(ctx context.Context, log loop.Log, script *scripted.Script, n int) ([]*loop.Session, error) {
	sessions := make([]*loop.Session, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	const starters = 256
	for w := range starters {
		wg.Go(func() {
			for i := w; i < n; i += starters {
				r, err := loopbench.Runner(scripted.NewCompact(script), log)
				if err == nil {
					sessions[i], err = r.Start(ctx, loop.Task{Prompt: "add the numbers"})
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return sessions, firstErr
}

func median(rs []result, f func(result) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func minOf(rs []result, f func(result) float64) float64 {
	m := f(rs[0])
	for _, r := range rs {
		m = min(m, f(r))
	}
	return m
}

func maxOf(rs []result, f func(result) float64) float64 {
	m := f(rs[0])
	for _, r := range rs {
		m = max(m, f(r))
	}
	return m
}
