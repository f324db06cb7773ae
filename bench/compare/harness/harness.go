// Package harness runs one contender of the comparison inside its own
// process and measures it there: every contender binary (the baseline,
// agentloop, each peer framework) is a main that calls Main with its
// Contender, so the measurement code, the HTTP client and the correctness
// check are the same for all of them, and each contender's CPU time,
// allocations and peak RSS are its own.
//
// Two modes:
//
//   - seq: sessions one after another; wall and CPU time (getrusage),
//     allocations and bytes (runtime.MemStats) per model round trip.
//   - conc: all sessions started at once; wall time, sessions/s, session
//     time percentiles, peak RSS (VmHWM, reset before the burst), live heap
//     and goroutines per session sampled while every session waits on the
//     model.
//
// The result is one JSON object (Result), written to -out or standard
// output. A session that did not make exactly K tool calls or did not end
// with the exact final text fails the run: the process exits 1.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/bench/compare/workload"
	"github.com/agentloop/agentloop/bench/internal/profile"
)

// Env is what a contender is given to build its runtime.
type Env struct {
	// BaseURL is the fake server's API root, ending in /v1; POST
	// BaseURL+"/chat/completions".
	BaseURL string
	// HTTPClient is the one client every contender must use.
	HTTPClient *http.Client
	// Dir is a scratch directory (for databases); it is removed afterwards.
	Dir string
}

// Runtime is a contender ready to run sessions.
type Runtime struct {
	// Run runs one whole session and returns its final text. The context
	// carries the session's tool-call counter: the framework must hand it
	// (or a context derived from it) to the add tool, which passes it to
	// workload.Add.
	Run func(ctx context.Context) (final string, err error)
	// Settle, called after the last session of a measured part and inside
	// its time, waits until everything the sessions recorded is durable:
	// a runtime whose Run returns before its last commit lands pays for
	// that commit here. Optional.
	Settle func() error
	// Close releases the runtime (closes databases). Optional.
	Close func() error
	// Stats, called after Close, returns extra figures for the result
	// (events per session, database size). Optional.
	Stats func() map[string]float64
}

// Contender names a runtime and builds it.
type Contender struct {
	Name string
	// Notes says in a line what is measured (API used, options).
	Notes string
	New   func(ctx context.Context, env Env) (*Runtime, error)
}

// NewHTTPClient returns the client every contender gets: keep-alive with
// an idle pool large enough that no connection is closed between calls
// (maxConns idle connections to the one host), no proxy, no timeout of its
// own (the harness bounds the run with a context).
func NewHTTPClient(maxConns int) *http.Client {
	maxConns = max(maxConns, 2000)
	return &http.Client{Transport: &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     false,
	}}
}

// Result is what one contender process measured.
type Result struct {
	Contender  string `json:"contender"`
	Notes      string `json:"notes,omitempty"`
	Mode       string `json:"mode"`
	Sessions   int    `json:"sessions"`
	Iterations int    `json:"iterations"` // model round trips measured
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`

	WallNs  int64  `json:"wall_ns"`
	CPUNs   int64  `json:"cpu_ns"` // user + system, whole process
	Mallocs uint64 `json:"mallocs"`
	Bytes   uint64 `json:"bytes"`

	NsPerIter     float64 `json:"ns_per_iter"`
	CPUNsPerIter  float64 `json:"cpu_ns_per_iter"`
	AllocsPerIter float64 `json:"allocs_per_iter"`
	BytesPerIter  float64 `json:"bytes_per_iter"`
	// GoroutinesPerIter is how many goroutines the process started per
	// iteration: each is a hand-off that may wake a thread.
	GoroutinesPerIter float64 `json:"goroutines_per_iter"`

	// conc mode
	SessionsPerSec       float64 `json:"sessions_per_sec,omitempty"`
	P50Ms                float64 `json:"p50_ms,omitempty"`
	P99Ms                float64 `json:"p99_ms,omitempty"`
	MaxMs                float64 `json:"max_ms,omitempty"`
	BaseRSS              int64   `json:"base_rss_bytes,omitempty"`
	PeakRSS              int64   `json:"peak_rss_bytes,omitempty"`
	HWMReset             bool    `json:"hwm_reset,omitempty"`
	RSSPerSession        float64 `json:"rss_per_session_bytes,omitempty"`
	HeapPerSession       float64 `json:"heap_per_session_bytes,omitempty"`
	GoroutinesPerSession float64 `json:"goroutines_per_session,omitempty"`
	// StackPerSession is the goroutine stack memory per session at the
	// probe: part of RSS the heap figures do not show.
	StackPerSession float64 `json:"stack_per_session_bytes,omitempty"`
	ProbeAfterMs    float64 `json:"probe_after_ms,omitempty"`
	// With -hold: the sessions the server held when the sample was taken,
	// and the RSS growth per session at that moment.
	HeldAtProbe          int64   `json:"held_at_probe,omitempty"`
	WaitingRSSPerSession float64 `json:"waiting_rss_per_session_bytes,omitempty"`

	Extra map[string]float64 `json:"extra,omitempty"`

	Failed int      `json:"failed,omitempty"`
	Errors []string `json:"errors,omitempty"`
}

type options struct {
	server, mode, dir, out  string
	sessions, warmup, conns int
	probe, timeout          time.Duration
	hold                    bool
	cpuprofile, memprofile  string
	heapprofile             string
	memprofilerate          int
}

// Main parses the flags, builds the contender and measures it. newContender
// is called after flag.Parse, so a contender may define flags of its own.
func Main(newContender func() Contender) {
	var o options
	flag.StringVar(&o.server, "server", "", "fake server API root (http://127.0.0.1:PORT/v1)")
	flag.StringVar(&o.mode, "mode", "seq", "seq (sessions one after another) or conc (all at once)")
	flag.IntVar(&o.sessions, "sessions", 200, "measured sessions")
	flag.IntVar(&o.warmup, "warmup", 20, "sessions run before measuring (sequentially)")
	flag.IntVar(&o.conns, "conns", 2000, "idle connections kept per host (at least 2000)")
	flag.DurationVar(&o.probe, "probe", 0, "conc: sample heap and goroutines this long after the start, while sessions wait on the model (0: don't)")
	flag.BoolVar(&o.hold, "hold", false, "conc: have the fake server hold every session's first model call, sample heap, goroutines and RSS once all sessions wait, then release them")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "limit for the whole measurement")
	flag.StringVar(&o.dir, "dir", "", "scratch directory (default: a new temporary one)")
	flag.StringVar(&o.out, "out", "", "write the JSON result here (default: standard output)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the measured part (seq and conc)")
	flag.StringVar(&o.memprofile, "memprofile", "", "write an allocation profile after the measured part")
	flag.StringVar(&o.heapprofile, "heapprofile", "", "conc: write a profile of the live heap when it is sampled (-probe or -hold)")
	flag.IntVar(&o.memprofilerate, "memprofilerate", 0, "runtime.MemProfileRate while profiling (0: Go's default)")
	flag.Parse()
	if o.memprofilerate > 0 {
		runtime.MemProfileRate = o.memprofilerate
	}
	c := newContender()
	res, err := run(c, o)
	if res != nil {
		if werr := write(res, o.out); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(1)
	}
}

func write(res *Result, path string) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func run(c Contender, o options) (*Result, error) {
	if o.server == "" {
		return nil, errors.New("-server is required: start the fake server (go run ./bench/compare/fakeserver) and pass its URL")
	}
	if o.mode != "seq" && o.mode != "conc" {
		return nil, fmt.Errorf("-mode %q: want seq or conc", o.mode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "compare-"+c.Name)
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	rt, err := c.New(ctx, Env{BaseURL: o.server, HTTPClient: NewHTTPClient(max(o.conns, o.sessions)), Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("building the runtime: %w", err)
	}
	res := &Result{Contender: c.Name, Notes: c.Notes, Mode: o.mode, Sessions: o.sessions, Iterations: o.sessions * workload.Iterations,
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	// fail closes the runtime (its databases, a server it started) before
	// reporting a failure of the warm-up.
	fail := func(err error) (*Result, error) {
		if rt.Close != nil {
			err = errors.Join(err, rt.Close())
		}
		return nil, err
	}
	for i := range o.warmup {
		if err := Once(ctx, rt); err != nil {
			return fail(fmt.Errorf("warm-up session %d: %w", i, err))
		}
	}
	// The measured part pays for its own commits, not the warm-up's.
	if err := rt.settle(); err != nil {
		return fail(fmt.Errorf("warm-up: %w", err))
	}
	var merr error
	if o.mode == "seq" {
		merr = sequential(ctx, rt, o, res)
	} else {
		merr = concurrent(ctx, rt, o, res)
	}
	if rt.Close != nil {
		if err := rt.Close(); err != nil && merr == nil {
			merr = fmt.Errorf("closing: %w", err)
		}
	}
	if rt.Stats != nil {
		res.Extra = rt.Stats()
	}
	return res, merr
}

// Once runs one session and checks it did exactly the work: the final
// text and the tool calls the workload asks for.
func Once(ctx context.Context, rt *Runtime) error {
	sctx, s := workload.WithSession(ctx)
	final, err := rt.Run(sctx)
	if err != nil {
		return err
	}
	return workload.Check(s, final)
}

type failures struct {
	mu   sync.Mutex
	n    int
	msgs []string
}

func (f *failures) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if len(f.msgs) < 5 && !slices.Contains(f.msgs, err.Error()) {
		f.msgs = append(f.msgs, err.Error())
	}
}

func (f *failures) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *failures) into(res *Result) error {
	res.Failed, res.Errors = f.n, f.msgs
	if f.n > 0 {
		return fmt.Errorf("%d of %d sessions failed; first: %s", f.n, res.Sessions, f.msgs[0])
	}
	return nil
}

func sequential(ctx context.Context, rt *Runtime, o options, res *Result) error {
	var fails failures
	stopProfile, err := startProfile(o)
	if err != nil {
		return err
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := goroutinesStarted()
	cpu0 := cpuTime()
	t0 := time.Now()
	for range o.sessions {
		if err := Once(ctx, rt); err != nil {
			fails.add(err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	if err := rt.settle(); err != nil {
		fails.add(err)
	}
	wall := time.Since(t0)
	cpu1 := cpuTime()
	runtime.ReadMemStats(&m1)
	if err := stopProfile(); err != nil {
		return err
	}
	iters := float64(res.Iterations)
	res.WallNs, res.CPUNs = wall.Nanoseconds(), (cpu1 - cpu0).Nanoseconds()
	res.Mallocs, res.Bytes = m1.Mallocs-m0.Mallocs, m1.TotalAlloc-m0.TotalAlloc
	res.NsPerIter = float64(res.WallNs) / iters
	res.CPUNsPerIter = float64(res.CPUNs) / iters
	res.AllocsPerIter = float64(res.Mallocs) / iters
	res.BytesPerIter = float64(res.Bytes) / iters
	res.GoroutinesPerIter = float64(goroutinesStarted()-g0) / iters
	return fails.into(res)
}

// goroutinesStarted is how many goroutines the process has started.
func goroutinesStarted() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func concurrent(ctx context.Context, rt *Runtime, o options, res *Result) error {
	var fails failures
	n := o.sessions
	durs := make([]time.Duration, n)
	gate := make(chan struct{})
	var ready, done sync.WaitGroup

	runtime.GC()
	// Return freed memory so the RSS before the burst is what is live.
	debug.FreeOSMemory()
	res.HWMReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	baseRSS, _ := procStatus("VmRSS")
	var m0, m1, mp runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()
	stopProfile, err := startProfile(o)
	if err != nil {
		return err
	}
	cpu0 := cpuTime()

	ctl := &http.Client{Timeout: 30 * time.Second}
	if o.hold {
		if err := control(ctx, ctl, http.MethodPost, o.server+"/hold", nil); err != nil {
			return fmt.Errorf("arming the fake server's hold: %w", err)
		}
	}
	var t0 time.Time
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-gate
			start := time.Now()
			if err := Once(ctx, rt); err != nil {
				fails.add(err)
			}
			durs[i] = time.Since(start)
		}()
	}
	ready.Wait()
	t0 = time.Now()
	close(gate)
	var heapProbe uint64
	var gProbe int
	probed := o.probe > 0 || o.hold
	sample := func() {
		gProbe = runtime.NumGoroutine()
		runtime.GC()
		runtime.ReadMemStats(&mp)
		heapProbe = mp.HeapAlloc
		res.ProbeAfterMs = float64(time.Since(t0)) / 1e6
		if o.heapprofile != "" {
			if f, err := os.Create(o.heapprofile); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	}
	if o.hold {
		held, err := waitHeld(ctx, ctl, o.server, int64(n), fails.count)
		res.HeldAtProbe = held
		if err == nil {
			sample()
			if rss, err := procStatus("VmRSS"); err == nil {
				res.WaitingRSSPerSession = float64(rss-baseRSS) / float64(n)
			}
		}
		if rerr := control(ctx, ctl, http.MethodPost, o.server+"/release", nil); rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			done.Wait()
			return fmt.Errorf("holding the sessions at their first model call: %w", err)
		}
	} else if o.probe > 0 {
		time.Sleep(o.probe)
		sample()
	}
	done.Wait()
	if err := rt.settle(); err != nil {
		fails.add(err)
	}
	wall := time.Since(t0)
	cpu1 := cpuTime()
	runtime.ReadMemStats(&m1)
	peak, _ := procStatus("VmHWM")
	if err := stopProfile(); err != nil {
		return err
	}

	res.WallNs, res.CPUNs = wall.Nanoseconds(), (cpu1 - cpu0).Nanoseconds()
	res.Mallocs, res.Bytes = m1.Mallocs-m0.Mallocs, m1.TotalAlloc-m0.TotalAlloc
	iters := float64(res.Iterations)
	res.NsPerIter = float64(res.WallNs) / iters
	res.CPUNsPerIter = float64(res.CPUNs) / iters
	res.AllocsPerIter = float64(res.Mallocs) / iters
	res.BytesPerIter = float64(res.Bytes) / iters
	res.SessionsPerSec = float64(n) / wall.Seconds()
	slices.Sort(durs)
	res.P50Ms = ms(durs[n/2])
	res.P99Ms = ms(durs[min(n-1, n*99/100)])
	res.MaxMs = ms(durs[n-1])
	res.BaseRSS, res.PeakRSS = baseRSS, peak
	res.RSSPerSession = float64(peak-baseRSS) / float64(n)
	if probed {
		// The session goroutines the harness itself starts are counted: one
		// per session for every contender.
		res.HeapPerSession = (float64(heapProbe) - float64(m0.HeapAlloc)) / float64(n)
		res.GoroutinesPerSession = float64(gProbe-g0) / float64(n)
		res.StackPerSession = (float64(mp.StackInuse) - float64(m0.StackInuse)) / float64(n)
	}
	return fails.into(res)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// control calls one of the fake server's control endpoints; out, when not
// nil, receives the JSON reply.
func control(ctx context.Context, c *http.Client, method, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: HTTP %d", method, url, resp.StatusCode)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// waitHeld polls the fake server until n requests are held, or a session
// has failed.
func waitHeld(ctx context.Context, c *http.Client, server string, n int64, failed func() int) (int64, error) {
	var st struct {
		Waiting int64 `json:"waiting"`
	}
	for {
		if err := control(ctx, c, http.MethodGet, server+"/stats", &st); err != nil {
			return st.Waiting, err
		}
		if st.Waiting >= n {
			return st.Waiting, nil
		}
		if f := failed(); f > 0 {
			return st.Waiting, fmt.Errorf("%d sessions failed before reaching the model", f)
		}
		select {
		case <-ctx.Done():
			return st.Waiting, fmt.Errorf("only %d of %d sessions reached the model: %w", st.Waiting, n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus reads a kB field of /proc/self/status in bytes.
func procStatus(field string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || string(k) != field {
			continue
		}
		f := bytes.Fields(v)
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb << 10, err
	}
	return 0, fmt.Errorf("/proc/self/status has no %s", field)
}

func startProfile(o options) (stop func() error, err error) {
	stopCPU, err := profile.StartCPU(o.cpuprofile)
	if err != nil {
		return nil, err
	}
	return func() error {
		if err := stopCPU(); err != nil {
			return err
		}
		if o.memprofile != "" {
			f, err := os.Create(o.memprofile)
			if err != nil {
				return err
			}
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}
		return nil
	}, nil
}

// settle waits for the runtime's commits still in flight (Runtime.Settle).
func (rt *Runtime) settle() error {
	if rt.Settle == nil {
		return nil
	}
	if err := rt.Settle(); err != nil {
		return fmt.Errorf("waiting for the sessions' last commits: %w", err)
	}
	return nil
}
