// Command compare runs the side-by-side benchmark of agentloop against the
// Go agent frameworks (issue 5) and writes bench/results/compare.md
// (overwritten: earlier results are in its history), and every measurement
// as JSON when -json names a file.
//
// It builds the fake OpenAI-compatible server and one binary per contender
// (the baseline and agentloop from this module, the peers from the nested
// module bench/peers), starts the fake server in its own process, and runs
// every contender in its own process against it, so each contender's CPU
// time, allocations and peak RSS are its own:
//
//  1. sequential: rounds × contenders (interleaved, the starting contender
//     rotating), sessions one after another, latency 0;
//  2. concurrency: 1,000 sessions at once, 50 ms per model reply;
//  3. scale: 10,000 agentloop sessions at once, 100 ms per reply;
//  4. persistence: the SQLite store's own append benchmark
//     (store/sqlite BenchmarkAppend, 1 / 100 / 1,000 sessions) and the
//     events and bytes the agentloop-sqlite runs above wrote;
//  5. CPU and allocation profiles of agentloop's sequential run.
//
// Run it from the repository root:
//
//	go run ./bench/compare/cmd/compare            # full settings
//	go run ./bench/compare/cmd/compare -quick     # a few minutes
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
	benchresult "github.com/agentloop/agentloop/bench/internal/result"
)

// contender is one binary and its arguments.
type contender struct {
	Name   string   `json:"name"`
	Module string   `json:"module"` // "main" or "peers"
	Pkg    string   `json:"package"`
	Args   []string `json:"args,omitempty"`
	bin    string
	optIn  bool // run only when named in -contenders
	// seqOnly: a floor of the sequential phase only. At 1,000 at once a
	// runtime may commit many sessions' calls together, which the floor's
	// one commit per call does not, so there it would be no floor.
	seqOnly bool
}

var all = []contender{
	{Name: "baseline", Module: "main", Pkg: "./bench/compare/contenders/baseline"},
	// The floors of a durable loop: the baseline plus one commit of one
	// row, waited for, before each tool call or at each session's end (see
	// the report's floors).
	{Name: "baseline-sqlite-commit", Module: "main", Pkg: "./bench/compare/contenders/baseline", Args: []string{"-commit", "sqlite"}, seqOnly: true},
	{Name: "baseline-sqlite-end-commit", Module: "main", Pkg: "./bench/compare/contenders/baseline", Args: []string{"-commit", "sqlite", "-at", "end"}, seqOnly: true},
	{Name: "baseline-postgres-commit", Module: "main", Pkg: "./bench/compare/contenders/baseline", Args: []string{"-commit", "postgres"}, optIn: true, seqOnly: true},
	{Name: "baseline-postgres-end-commit", Module: "main", Pkg: "./bench/compare/contenders/baseline", Args: []string{"-commit", "postgres", "-at", "end"}, optIn: true, seqOnly: true},
	// The path the product takes: sessions started through package service
	// (a lease each, every append fenced), as `agentloop run` and
	// `agentloop serve` start them.
	{Name: "agentloop-service-sqlite", Module: "main", Pkg: "./bench/compare/contenders/agentloop", Args: []string{"-store", "sqlite", "-via", "service"}},
	// The bare loop.Runner, as a program embedding the library drives it.
	{Name: "agentloop-sqlite", Module: "main", Pkg: "./bench/compare/contenders/agentloop", Args: []string{"-store", "sqlite"}},
	{Name: "agentloop-memory", Module: "main", Pkg: "./bench/compare/contenders/agentloop", Args: []string{"-store", "memory"}},
	// The same with add as a plain tool.Func, not declared idempotent: the
	// tool a user writes first. Each call waits for the commit of the reply
	// that asked for it.
	{Name: "agentloop-service-sqlite-plain", Module: "main", Pkg: "./bench/compare/contenders/agentloop", Args: []string{"-store", "sqlite", "-via", "service", "-tool", "plain"}},
	{Name: "agentloop-sqlite-plain", Module: "main", Pkg: "./bench/compare/contenders/agentloop", Args: []string{"-store", "sqlite", "-tool", "plain"}},
	// Not run unless named in -contenders: they need PostgreSQL's binaries
	// (or $AGENTLOOP_BENCH_POSTGRES), and its server shares the CPUs.
	{Name: "agentloop-service-postgres", Module: "main", Pkg: "./bench/compare/contenders/agentloop", Args: []string{"-store", "postgres", "-via", "service"}, optIn: true},
	{Name: "agentloop-service-postgres-plain", Module: "main", Pkg: "./bench/compare/contenders/agentloop", Args: []string{"-store", "postgres", "-via", "service", "-tool", "plain"}, optIn: true},
	{Name: "agentloop-postgres", Module: "main", Pkg: "./bench/compare/contenders/agentloop", Args: []string{"-store", "postgres"}, optIn: true},
	// Run returns before a session's last commit lands (loop.Config.EndBehind);
	// the harness awaits every commit inside the measured time.
	{Name: "agentloop-postgres-endbehind", Module: "main", Pkg: "./bench/compare/contenders/agentloop", Args: []string{"-store", "postgres", "-end-behind"}, optIn: true},
	{Name: "openai-go", Module: "peers", Pkg: "./openaigo"},
	{Name: "langchaingo", Module: "peers", Pkg: "./langchaingo"},
	{Name: "langchaingo-agent", Module: "peers", Pkg: "./langchaingo-agent"},
	{Name: "eino-react", Module: "peers", Pkg: "./eino-react"},
	{Name: "eino-adk", Module: "peers", Pkg: "./eino-adk"},
	{Name: "genkit", Module: "peers", Pkg: "./genkit"},
	{Name: "adk-go", Module: "peers", Pkg: "./adkgo"},
}

type settings struct {
	Quick         bool          `json:"quick"`
	Rounds        int           `json:"rounds"`
	SeqSessions   int           `json:"seq_sessions"`
	SeqWarmup     int           `json:"seq_warmup"`
	Conc          int           `json:"conc_sessions"`
	ConcLatency   time.Duration `json:"conc_latency_ns"`
	ConcRounds    int           `json:"conc_rounds"`
	Scale         int           `json:"scale_sessions"`
	ScaleLatency  time.Duration `json:"scale_latency_ns"`
	ScaleAll      bool          `json:"scale_all"`
	PersistIters  int           `json:"persist_iterations"`
	Profile       bool          `json:"profile"`
	ProfileRounds int           `json:"profile_sessions"`
	Contenders    []string      `json:"contenders"`
}

func main() {
	var s settings
	var only, outPath, jsonPath, profDir string
	flag.BoolVar(&s.Quick, "quick", false, "quick settings: 3 rounds of 100 sequential sessions, 1 concurrency round, 5,000 persistence iterations")
	flag.IntVar(&s.Rounds, "rounds", 5, "sequential rounds (contenders interleaved in each)")
	flag.IntVar(&s.SeqSessions, "seq-sessions", 300, "sequential sessions per contender per round")
	flag.IntVar(&s.SeqWarmup, "seq-warmup", 30, "warm-up sessions before each sequential measurement")
	flag.IntVar(&s.Conc, "conc", 1000, "sessions at once in the concurrency phase (0 skips it)")
	flag.DurationVar(&s.ConcLatency, "conc-latency", 50*time.Millisecond, "model latency in the concurrency phase")
	flag.IntVar(&s.ConcRounds, "conc-rounds", 6, "concurrency rounds (a round's peak RSS varies by ±5 %: medians of fewer move by as much)")
	flag.IntVar(&s.Scale, "scale", 10000, "agentloop sessions at once in the scale phase (0 skips it)")
	flag.DurationVar(&s.ScaleLatency, "scale-latency", 100*time.Millisecond, "model latency in the scale phase")
	flag.BoolVar(&s.ScaleAll, "scale-all", false, "run every contender in the scale phase, not only baseline and agentloop")
	flag.IntVar(&s.PersistIters, "persist-iters", 20000, "iterations of the SQLite append benchmark per session count (0 skips it)")
	flag.BoolVar(&s.Profile, "profile", true, "profile agentloop's sequential run (CPU and allocations)")
	flag.StringVar(&only, "contenders", "", "comma-separated contenders to run (default all; baseline is always run)")
	flag.StringVar(&outPath, "out", benchresult.Path("compare"), "where the Markdown report goes (overwritten); - for standard output only")
	flag.StringVar(&jsonPath, "json", "", "also write every measurement of every round, the summaries and the profiles' top lists to this file as JSON")
	flag.StringVar(&profDir, "profiles", "", "keep the profiles in this directory (default: a temporary one, removed)")
	flag.Parse()
	if s.Quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, p *int, v int) {
			if !set[name] {
				*p = v
			}
		}
		def("rounds", &s.Rounds, 3)
		def("seq-sessions", &s.SeqSessions, 100)
		def("seq-warmup", &s.SeqWarmup, 20)
		def("conc-rounds", &s.ConcRounds, 1)
		def("persist-iters", &s.PersistIters, 5000)
	}
	if err := run(s, only, outPath, jsonPath, profDir); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run(s settings, only, outPath, jsonPath, profDir string) error {
	root, err := findRoot()
	if err != nil {
		return err
	}
	var contenders []contender
	for _, c := range all {
		if !c.optIn {
			contenders = append(contenders, c)
		}
	}
	if only != "" {
		want := map[string]bool{"baseline": true}
		for _, n := range strings.Split(only, ",") {
			want[strings.TrimSpace(n)] = true
		}
		contenders = nil
		for _, c := range all {
			if want[c.Name] {
				contenders = append(contenders, c)
				delete(want, c.Name)
			}
		}
		delete(want, "baseline")
		for n := range want {
			return fmt.Errorf("-contenders: unknown contender %q", n)
		}
	}
	for _, c := range contenders {
		s.Contenders = append(s.Contenders, c.Name)
		if strings.Contains(c.Name, "postgres") && os.Getenv("AGENTLOOP_BENCH_POSTGRES") == "" {
			// One server for every round; each run makes its own database.
			url, stop, err := pgtest.StartServer(true)
			if err != nil {
				return fmt.Errorf("%s: %w (or set AGENTLOOP_BENCH_POSTGRES=postgres://…)", c.Name, err)
			}
			defer stop()
			os.Setenv("AGENTLOOP_BENCH_POSTGRES", url)
		}
	}
	tmp, err := os.MkdirTemp("", "compare")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if profDir == "" {
		profDir = filepath.Join(tmp, "profiles")
	}
	if err := os.MkdirAll(profDir, 0o755); err != nil {
		return err
	}

	rep := &report{Date: time.Now().UTC().Format(time.RFC3339), Stamp: benchresult.Stamp(), Settings: s,
		Command: strings.Join(append([]string{"go run ./bench/compare/cmd/compare"}, os.Args[1:]...), " "), GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, CPU: cpuModel(), NumCPU: runtime.NumCPU(), LoadStart: loadAvg(),
		Versions: peerVersions(filepath.Join(root, "bench", "peers", "go.mod")), Failures: map[string]string{},
		Workload: fmt.Sprintf("K=%d tool calls (add) + 1 final answer = %d non-streaming Chat Completions round trips per session", workload.K, workload.Iterations)}

	// Build.
	logf("building the fake server and %d contenders", len(contenders))
	fakeBin := filepath.Join(tmp, "fakeserver")
	if out, err := goCmd(root, "build", "-o", fakeBin, "./bench/compare/fakeserver"); err != nil {
		return fmt.Errorf("building the fake server: %v\n%s", err, out)
	}
	built := map[string]string{}
	var ok []contender
	for _, c := range contenders {
		key := c.Module + " " + c.Pkg
		bin, done := built[key]
		if !done {
			bin = filepath.Join(tmp, "bin-"+strings.NewReplacer("/", "_", ".", "_").Replace(key))
			dir := root
			if c.Module == "peers" {
				dir = filepath.Join(root, "bench", "peers")
			}
			if out, err := goCmd(dir, "build", "-o", bin, c.Pkg); err != nil {
				hint := ""
				if c.Module == "peers" && (strings.Contains(out, "go.sum") || strings.Contains(out, "go mod tidy")) {
					hint = " (the main module's requirements changed: run `cd bench/peers && go mod tidy`)"
				}
				rep.Failures[c.Name] = fmt.Sprintf("build failed%s: %v: %s", hint, err, tail(out, 1500))
				logf("%s: build failed (see the report); going on without it", c.Name)
				built[key] = ""
				continue
			}
			built[key] = bin
		}
		if bin == "" {
			continue
		}
		c.bin = bin
		ok = append(ok, c)
	}
	if len(ok) == 0 || ok[0].Name != "baseline" {
		return errors.New("the baseline did not build; nothing to compare against")
	}
	contenders = ok

	// 1. Sequential.
	if s.Rounds > 0 && s.SeqSessions > 0 {
		srv, err := startServer(fakeBin, 0)
		if err != nil {
			return err
		}
		for r := range s.Rounds {
			round := map[string]*harness.Result{}
			for i := range contenders {
				c := contenders[(i+r)%len(contenders)]
				if _, failed := rep.Failures[c.Name]; failed {
					continue
				}
				logf("sequential round %d/%d: %s", r+1, s.Rounds, c.Name)
				res, err := measure(c, srv.url, tmp, "-mode", "seq", "-sessions", itoa(s.SeqSessions), "-warmup", itoa(s.SeqWarmup))
				if err != nil {
					rep.Failures[c.Name] = "sequential: " + err.Error()
					logf("%s failed: %v", c.Name, err)
					continue
				}
				round[c.Name] = res
			}
			rep.Sequential.Rounds = append(rep.Sequential.Rounds, round)
		}
		if err := srv.stop(); err != nil {
			return err
		}
		rep.Sequential.Rows = seqRows(contenders, rep.Sequential.Rounds)
		rep.Sequential.Floors = floorRows(contenders, rep.Sequential.Rounds)
	}

	// Profiles of agentloop's sequential run.
	if s.Profile && s.SeqSessions > 0 {
		srv, err := startServer(fakeBin, 0)
		if err != nil {
			return err
		}
		for _, c := range contenders {
			if !strings.HasPrefix(c.Name, "agentloop") {
				continue
			}
			if _, failed := rep.Failures[c.Name]; failed {
				continue
			}
			logf("profiling %s", c.Name)
			cpu, mem := filepath.Join(profDir, c.Name+".cpu.pprof"), filepath.Join(profDir, c.Name+".mem.pprof")
			// Two runs: sampling allocations finely would distort the CPU profile.
			if _, err := measure(c, srv.url, tmp, "-mode", "seq", "-sessions", itoa(2*s.SeqSessions), "-warmup", itoa(s.SeqWarmup),
				"-cpuprofile", cpu); err != nil {
				rep.Failures[c.Name+" (profile)"] = err.Error()
				continue
			}
			if _, err := measure(c, srv.url, tmp, "-mode", "seq", "-sessions", itoa(s.SeqSessions), "-warmup", itoa(s.SeqWarmup),
				"-memprofile", mem, "-memprofilerate", "512"); err != nil {
				rep.Failures[c.Name+" (profile)"] = err.Error()
				continue
			}
			rep.Profiles = append(rep.Profiles, profile{Contender: c.Name,
				CPUTop:      pprofTop(root, c.bin, cpu, "-nodecount=25"),
				CPUCum:      pprofTop(root, c.bin, cpu, "-cum", "-nodecount=30", "-show=github.com/agentloop/agentloop/(loop|store|model|tool)"),
				AllocsTop:   pprofTop(root, c.bin, mem, "-sample_index=alloc_objects", "-nodecount=25"),
				AllocsCum:   pprofTop(root, c.bin, mem, "-sample_index=alloc_objects", "-cum", "-nodecount=30", "-show=github.com/agentloop/agentloop/(loop|store|model|tool)"),
				CPUFile:     cpu,
				AllocsFile:  mem,
				SessionsRun: 2 * s.SeqSessions,
			})
		}
		if err := srv.stop(); err != nil {
			return err
		}
	}

	// 2. Concurrency.
	if s.Conc > 0 && s.ConcRounds > 0 {
		srv, err := startServer(fakeBin, s.ConcLatency)
		if err != nil {
			return err
		}
		for r := range s.ConcRounds {
			round := map[string]*harness.Result{}
			for i := range contenders {
				c := contenders[(i+r)%len(contenders)]
				if _, failed := rep.Failures[c.Name]; failed || c.seqOnly {
					continue
				}
				logf("concurrency round %d/%d: %s, %d sessions", r+1, s.ConcRounds, c.Name, s.Conc)
				res, err := measure(c, srv.url, tmp, "-mode", "conc", "-sessions", itoa(s.Conc), "-warmup", "10")
				if err != nil {
					rep.Failures[c.Name] = "concurrency: " + err.Error()
					logf("%s failed: %v", c.Name, err)
					continue
				}
				round[c.Name] = res
			}
			rep.Concurrent.Rounds = append(rep.Concurrent.Rounds, round)
		}
		// Heap and goroutines per session, sampled once every session
		// waits on its first model call (the server holds them).
		rep.Concurrent.Waiting = map[string]*harness.Result{}
		for _, c := range contenders {
			if _, failed := rep.Failures[c.Name]; failed || c.seqOnly {
				continue
			}
			logf("concurrency, all waiting: %s, %d sessions", c.Name, s.Conc)
			res, err := measure(c, srv.url, tmp, "-mode", "conc", "-sessions", itoa(s.Conc), "-warmup", "10", "-hold")
			if err != nil {
				rep.Failures[c.Name] = "concurrency (held): " + err.Error()
				logf("%s failed: %v", c.Name, err)
				continue
			}
			rep.Concurrent.Waiting[c.Name] = res
		}
		if err := srv.stop(); err != nil {
			return err
		}
		rep.Concurrent.Rows = concRows(contenders, rep.Concurrent.Rounds, rep.Concurrent.Waiting)
	}

	// 3. Scale.
	if s.Scale > 0 {
		srv, err := startServer(fakeBin, s.ScaleLatency)
		if err != nil {
			return err
		}
		for _, c := range contenders {
			if !s.ScaleAll && c.Name != "baseline" && !strings.HasPrefix(c.Name, "agentloop") {
				continue
			}
			if _, failed := rep.Failures[c.Name]; failed {
				continue
			}
			logf("scale: %s, %d sessions", c.Name, s.Scale)
			res, err := measure(c, srv.url, tmp, "-mode", "conc", "-sessions", itoa(s.Scale), "-warmup", "10", "-conns", itoa(s.Scale))
			if err != nil {
				rep.Failures[c.Name+" (scale)"] = err.Error()
				logf("%s failed: %v", c.Name, err)
				continue
			}
			logf("scale, all waiting: %s, %d sessions", c.Name, s.Scale)
			held, err := measure(c, srv.url, tmp, "-mode", "conc", "-sessions", itoa(s.Scale), "-warmup", "10", "-conns", itoa(s.Scale), "-hold")
			if err != nil {
				rep.Failures[c.Name+" (scale, held)"] = err.Error()
				logf("%s failed: %v", c.Name, err)
				continue
			}
			rep.Scale = append(rep.Scale, scaleRow(res, held, s.ScaleLatency))
		}
		if err := srv.stop(); err != nil {
			return err
		}
	}

	// 4. Persistence.
	if s.PersistIters > 0 {
		logf("persistence: store/sqlite BenchmarkAppend, %d iterations per session count", s.PersistIters)
		rows, out, err := appendBench(root, s.PersistIters)
		if err != nil {
			rep.Failures["store/sqlite BenchmarkAppend"] = fmt.Sprintf("%v: %s", err, tail(out, 1500))
		}
		rep.Persistence.Append = rows
	}
	rep.Persistence.Workload = workloadPersistence(rep)

	rep.LoadEnd = loadAvg()
	rep.Targets = targets(rep)
	return write(rep, outPath, jsonPath)
}

// measure runs one contender process and returns what it measured.
func measure(c contender, url, tmp string, args ...string) (*harness.Result, error) {
	out := filepath.Join(tmp, "result.json")
	_ = os.Remove(out)
	dir, err := os.MkdirTemp(tmp, "run")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	argv := append(slices.Clone(c.Args), "-server", url, "-out", out, "-dir", dir)
	argv = append(argv, args...)
	cmd := exec.Command(c.bin, argv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = io.Discard
	runErr := cmd.Run()
	var res harness.Result
	b, readErr := os.ReadFile(out)
	if readErr == nil {
		readErr = json.Unmarshal(b, &res)
	}
	if runErr != nil {
		msg := tail(stderr.String(), 1500)
		if readErr == nil && len(res.Errors) > 0 {
			msg = fmt.Sprintf("%d sessions failed: %s", res.Failed, strings.Join(res.Errors, " | "))
		}
		return nil, fmt.Errorf("%v: %s", runErr, msg)
	}
	if readErr != nil {
		return nil, fmt.Errorf("reading the result: %v (stderr: %s)", readErr, tail(stderr.String(), 500))
	}
	return &res, nil
}

type server struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	url    string
	stderr *bytes.Buffer
}

// startServer starts the fake server and reads its URL; it exits when its
// standard input closes.
func startServer(bin string, latency time.Duration) (*server, error) {
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-latency", latency.String(), "-stdin")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the fake server printed no address: %v: %s", err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return &server{cmd: cmd, stdin: stdin, url: strings.TrimSpace(line), stderr: &stderr}, nil
}

func (s *server) stop() error {
	_ = s.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("fake server: %v: %s", err, s.stderr.String())
		}
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	if strings.Contains(s.stderr.String(), "rejected a request") {
		logf("fake server log: %s", strings.TrimSpace(s.stderr.String()))
	}
	return nil
}

func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func pprofTop(root, bin, prof string, args ...string) string {
	out, err := goCmd(root, append(append([]string{"tool", "pprof", "-top"}, args...), bin, prof)...)
	if err != nil {
		return "pprof failed: " + err.Error() + "\n" + out
	}
	// Drop the header lines that name temporary files.
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

var benchLine = regexp.MustCompile(`^BenchmarkAppend/(\d+)-sessions(?:-\d+)?\s+(\d+)\s+(.*)$`)

// appendBench runs store/sqlite's BenchmarkAppend (storetest.BenchAppend)
// and reads its metrics.
func appendBench(root string, iters int) ([]appendRow, string, error) {
	out, err := goCmd(root, "test", "-run", "^$", "-bench", "^BenchmarkAppend$", "-benchtime", itoa(iters)+"x", "./store/sqlite/")
	if err != nil {
		return nil, out, err
	}
	var rows []appendRow
	for _, l := range strings.Split(out, "\n") {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		row := appendRow{Sessions: atoi(m[1]), Iterations: atoi(m[2]), Metrics: map[string]float64{}}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err == nil {
				row.Metrics[f[i+1]] = v
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, out, errors.New("no BenchmarkAppend results in the output")
	}
	return rows, out, nil
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/agentloop/agentloop\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run this from the agentloop repository (no go.mod of github.com/agentloop/agentloop above the working directory)")
		}
		dir = parent
	}
}

func peerVersions(gomod string) map[string]string {
	want := []string{"github.com/cloudwego/eino", "github.com/cloudwego/eino-ext/components/model/openai", "github.com/tmc/langchaingo",
		"github.com/firebase/genkit/go", "google.golang.org/adk/v2", "github.com/openai/openai-go/v3", "github.com/openai/openai-go",
		"github.com/bytedance/sonic"}
	out := map[string]string{}
	b, err := os.ReadFile(gomod)
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "require "))
		if len(f) >= 2 && slices.Contains(want, f[0]) {
			out[f[0]] = f[1]
		}
	}
	return out
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
