// Command telemetrybench measures what telemetry costs a session: the
// loop benchmark's sessions (scripted model, a pure tool, K+1 iterations,
// every event in SQLite) run with no telemetry at all (the baseline), with
// telemetry set up but nothing configured (off: what every process without
// OTEL_* variables pays), and with traces exported over OTLP to an
// in-process receiver plus Prometheus metrics (on). Rounds are interleaved;
// it prints the median time per iteration of each and its ratio to the
// baseline measured in the same run.
//
//	go run ./bench/cmd/telemetrybench [-rounds 7] [-sessions 100] [-out FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	benchresult "github.com/agentloop/agentloop/bench/internal/result"
	"github.com/agentloop/agentloop/bench/loopbench"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/telemetry/otlptest"
)

type mode struct {
	name  string
	setup func() (*telemetry.Telemetry, error) // nil: no telemetry
}

func main() {
	rounds := flag.Int("rounds", 7, "interleaved rounds")
	sessions := flag.Int("sessions", 100, "sessions per round and mode")
	out := flag.String("out", benchresult.Path("telemetry"), "where the result goes (overwritten); - for standard output only")
	flag.Parse()

	recv := otlptest.Start()
	defer recv.Close()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"} {
		os.Unsetenv(k)
	}
	modes := []mode{
		{"no telemetry (baseline)", nil},
		{"telemetry off (no OTEL_* set)", func() (*telemetry.Telemetry, error) {
			return telemetry.New(context.Background(), telemetry.Options{})
		}},
		{"traces over OTLP + Prometheus metrics", func() (*telemetry.Telemetry, error) {
			os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
			defer os.Unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT")
			return telemetry.New(context.Background(), telemetry.Options{Prometheus: true})
		}},
	}
	dir, err := os.MkdirTemp("", "telemetrybench")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	perIter := make([][]float64, len(modes)) // µs per iteration, per round
	for r := range *rounds {
		for i, m := range modes {
			us, err := run(filepath.Join(dir, fmt.Sprintf("r%d-m%d.db", r, i)), m, *sessions)
			if err != nil {
				fmt.Fprintln(os.Stderr, m.name+":", err)
				os.Exit(1)
			}
			perIter[i] = append(perIter[i], us)
		}
	}
	w, closeOut, err := benchresult.Create(*out, "What telemetry costs an iteration")
	if err != nil {
		panic(err)
	}
	defer closeOut()
	fmt.Fprintf(w, "telemetry cost per iteration: %d rounds × %d sessions × %d iterations, SQLite, medians (min–max)\n\n", *rounds, *sessions, loopbench.K+1)
	fmt.Fprintln(w, "| mode | µs/iteration | ratio to baseline |")
	fmt.Fprintln(w, "|---|---:|---:|")
	base := median(perIter[0])
	for i, m := range modes {
		fmt.Fprintf(w, "| %s | %.1f (%.1f–%.1f) | %.3f× |\n", m.name, median(perIter[i]), slices.Min(perIter[i]), slices.Max(perIter[i]), median(perIter[i])/base)
	}
	fmt.Fprintf(w, "\nspans received by the in-process OTLP receiver: %d\n", len(recv.Spans()))
}

// run runs n sessions on a fresh database under mode m and returns the
// wall time per iteration in µs, telemetry's flush included.
func run(path string, m mode, n int) (float64, error) {
	st, err := sqlite.Open(path)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	var tel *telemetry.Telemetry
	stop := func() {}
	if m.setup != nil {
		if tel, err = m.setup(); err != nil {
			return 0, err
		}
		stop = tel.Observe(st)
	}
	script := loopbench.Script()
	start := time.Now()
	for range n {
		r, err := loopbench.Runner(scripted.NewCompact(script), st)
		if err != nil {
			return 0, err
		}
		s, err := r.Run(context.Background(), loop.Task{Prompt: "add the numbers"})
		if err != nil {
			return 0, err
		}
		if err := loopbench.Check(s); err != nil {
			return 0, err
		}
	}
	// Every commit lands, and its watchers hear of it, before the store
	// closes: a session's end may land after its Run returned.
	if err := st.Close(); err != nil {
		return 0, err
	}
	stop()
	if tel != nil {
		if err := tel.Shutdown(context.Background()); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(start).Microseconds()) / float64(n*(loopbench.K+1)), nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
