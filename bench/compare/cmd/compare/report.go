package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

type report struct {
	Date      string            `json:"date"`
	Stamp     string            `json:"stamp"`   // date, commit, machine (benchresult.Stamp)
	Command   string            `json:"command"` // how this run was started
	GoVersion string            `json:"go_version"`
	Platform  string            `json:"platform"`
	CPU       string            `json:"cpu"`
	NumCPU    int               `json:"num_cpu"`
	LoadStart string            `json:"loadavg_start"`
	LoadEnd   string            `json:"loadavg_end"`
	Workload  string            `json:"workload"`
	Settings  settings          `json:"settings"`
	Versions  map[string]string `json:"versions"`

	Sequential struct {
		Rounds []map[string]*harness.Result `json:"rounds"`
		Rows   []seqRow                     `json:"summary"`
		Floors []floorRow                   `json:"floors,omitempty"`
	} `json:"sequential"`
	Concurrent struct {
		Rounds  []map[string]*harness.Result `json:"rounds"`
		Waiting map[string]*harness.Result   `json:"waiting"`
		Rows    []concRow                    `json:"summary"`
	} `json:"concurrent"`
	Scale       []scaleEntry `json:"scale"`
	Persistence struct {
		Append   []appendRow      `json:"store_append_benchmark"`
		Workload *workloadPersist `json:"agentloop_sqlite_workload,omitempty"`
	} `json:"persistence"`
	Profiles []profile         `json:"profiles"`
	Targets  []target          `json:"targets"`
	Failures map[string]string `json:"failures"`
}

type stat struct{ Min, Median, Max float64 }

func statOf(xs []float64) stat {
	if len(xs) == 0 {
		return stat{math.NaN(), math.NaN(), math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return stat{s[0], s[len(s)/2], s[len(s)-1]}
}

type seqRow struct {
	Contender     string `json:"contender"`
	Notes         string `json:"notes"`
	Rounds        int    `json:"rounds"`
	NsPerIter     stat   `json:"ns_per_iter"`
	WallRatio     stat   `json:"wall_ratio"`
	CPUNsPerIter  stat   `json:"cpu_ns_per_iter"`
	CPURatio      stat   `json:"cpu_ratio"`
	AllocsPerIter stat   `json:"allocs_per_iter"`
	AllocsRatio   stat   `json:"allocs_ratio"`
	BytesPerIter  stat   `json:"bytes_per_iter"`
	BytesRatio    stat   `json:"bytes_ratio"`
	Goroutines    stat   `json:"goroutines_per_iter"`
}

// perRound returns, over the rounds where both ran, f of the contender and
// f of the contender divided by f of the baseline in the same round.
func perRound(rounds []map[string]*harness.Result, name string, f func(*harness.Result) float64) (vals, ratios []float64) {
	return perRoundTo(rounds, name, "baseline", f)
}

// perRoundTo is perRound with the ratios taken to the contender named to.
func perRoundTo(rounds []map[string]*harness.Result, name, to string, f func(*harness.Result) float64) (vals, ratios []float64) {
	for _, r := range rounds {
		x, ok := r[name]
		if !ok {
			continue
		}
		vals = append(vals, f(x))
		if b, ok := r[to]; ok && f(b) != 0 {
			ratios = append(ratios, f(x)/f(b))
		}
	}
	return vals, ratios
}

// floorOf names, for each durable contender, the bare loop that pays only
// the commits it must wait for: one row, alone, in the same kind of
// database (contender baseline -commit). A plain tool waits for one
// before every call; a session whose end is durable when it returns, for
// one at its end.
var floorOf = map[string]string{
	"agentloop-sqlite-plain":           "baseline-sqlite-commit",
	"agentloop-service-sqlite-plain":   "baseline-sqlite-commit",
	"agentloop-service-postgres-plain": "baseline-postgres-commit",
	"agentloop-sqlite":                 "baseline-sqlite-end-commit",
	"agentloop-service-sqlite":         "baseline-sqlite-end-commit",
	"agentloop-postgres":               "baseline-postgres-end-commit",
	"agentloop-service-postgres":       "baseline-postgres-end-commit",
}

// floorRow sets a contender beside its floor, in the same rounds.
type floorRow struct {
	Contender string `json:"contender"`
	Floor     string `json:"floor"`
	// FloorRatio is the floor's wall time to the baseline's; Ratio the
	// contender's to the floor's.
	FloorRatio stat `json:"floor_wall_ratio"`
	Ratio      stat `json:"wall_ratio_to_floor"`
}

func floorRows(cs []contender, rounds []map[string]*harness.Result) []floorRow {
	var rows []floorRow
	wall := func(x *harness.Result) float64 { return x.NsPerIter }
	for _, c := range cs {
		floor, ok := floorOf[c.Name]
		if !ok {
			continue
		}
		// Only rounds in which the contender, its floor and the baseline
		// all ran: both ratios then describe the same rounds.
		var same []map[string]*harness.Result
		for _, r := range rounds {
			if r[c.Name] != nil && r[floor] != nil && r["baseline"] != nil {
				same = append(same, r)
			}
		}
		_, toFloor := perRoundTo(same, c.Name, floor, wall)
		_, floorToBase := perRound(same, floor, wall)
		if len(toFloor) == 0 || len(floorToBase) == 0 {
			continue
		}
		rows = append(rows, floorRow{Contender: c.Name, Floor: floor, FloorRatio: statOf(floorToBase), Ratio: statOf(toFloor)})
	}
	return rows
}

// isFloor says whether a contender is one of the bare loops (baseline,
// with or without a commit per call) rather than a framework.
func isFloor(name string) bool { return strings.HasPrefix(name, "baseline") }

func seqRows(cs []contender, rounds []map[string]*harness.Result) []seqRow {
	var rows []seqRow
	for _, c := range cs {
		row := seqRow{Contender: c.Name}
		var v, r []float64
		v, r = perRound(rounds, c.Name, func(x *harness.Result) float64 { return x.NsPerIter })
		if len(v) == 0 {
			continue
		}
		row.Rounds = len(v)
		row.NsPerIter, row.WallRatio = statOf(v), statOf(r)
		v, r = perRound(rounds, c.Name, func(x *harness.Result) float64 { return x.CPUNsPerIter })
		row.CPUNsPerIter, row.CPURatio = statOf(v), statOf(r)
		v, r = perRound(rounds, c.Name, func(x *harness.Result) float64 { return x.AllocsPerIter })
		row.AllocsPerIter, row.AllocsRatio = statOf(v), statOf(r)
		v, r = perRound(rounds, c.Name, func(x *harness.Result) float64 { return x.BytesPerIter })
		row.BytesPerIter, row.BytesRatio = statOf(v), statOf(r)
		v, _ = perRound(rounds, c.Name, func(x *harness.Result) float64 { return x.GoroutinesPerIter })
		row.Goroutines = statOf(v)
		for _, rd := range rounds {
			if x, ok := rd[c.Name]; ok {
				row.Notes = x.Notes
			}
		}
		rows = append(rows, row)
	}
	return rows
}

type concRow struct {
	Contender            string  `json:"contender"`
	Rounds               int     `json:"rounds"`
	WallMs               stat    `json:"wall_ms"`
	WallRatio            stat    `json:"wall_ratio"`
	SessionsPerSec       float64 `json:"sessions_per_sec"`
	P50Ms                float64 `json:"p50_ms"`
	P99Ms                float64 `json:"p99_ms"`
	PeakRSSMiB           float64 `json:"peak_rss_mib"`
	RSSPerSessionKiB     stat    `json:"rss_per_session_kib"`
	RSSRatio             stat    `json:"rss_ratio"`
	HeapPerSessionKiB    float64 `json:"heap_per_waiting_session_kib"`
	HeapRatio            float64 `json:"heap_ratio"`
	WaitingRSSKiB        float64 `json:"rss_per_waiting_session_kib"`
	WaitingRSSRatio      float64 `json:"waiting_rss_ratio"`
	GoroutinesPerSession float64 `json:"goroutines_per_waiting_session"`
	GoroutineRatio       float64 `json:"goroutine_ratio"`
	CPUNsPerIter         float64 `json:"cpu_ns_per_iter"`
	CPURatio             float64 `json:"cpu_ratio"`
}

func concRows(cs []contender, rounds []map[string]*harness.Result, waiting map[string]*harness.Result) []concRow {
	var rows []concRow
	for _, c := range cs {
		row := concRow{Contender: c.Name}
		v, r := perRound(rounds, c.Name, func(x *harness.Result) float64 { return float64(x.WallNs) / 1e6 })
		if len(v) == 0 {
			continue
		}
		row.Rounds = len(v)
		row.WallMs, row.WallRatio = statOf(v), statOf(r)
		med := func(f func(*harness.Result) float64) (float64, float64) {
			v, r := perRound(rounds, c.Name, f)
			return statOf(v).Median, statOf(r).Median
		}
		row.SessionsPerSec, _ = med(func(x *harness.Result) float64 { return x.SessionsPerSec })
		row.P50Ms, _ = med(func(x *harness.Result) float64 { return x.P50Ms })
		row.P99Ms, _ = med(func(x *harness.Result) float64 { return x.P99Ms })
		row.PeakRSSMiB, _ = med(func(x *harness.Result) float64 { return float64(x.PeakRSS) / (1 << 20) })
		v, r = perRound(rounds, c.Name, func(x *harness.Result) float64 { return x.RSSPerSession / 1024 })
		row.RSSPerSessionKiB, row.RSSRatio = statOf(v), statOf(r)
		if w, b := waiting[c.Name], waiting["baseline"]; w != nil {
			row.HeapPerSessionKiB = w.HeapPerSession / 1024
			row.WaitingRSSKiB = w.WaitingRSSPerSession / 1024
			row.GoroutinesPerSession = w.GoroutinesPerSession
			if b != nil {
				row.HeapRatio = w.HeapPerSession / b.HeapPerSession
				row.WaitingRSSRatio = w.WaitingRSSPerSession / b.WaitingRSSPerSession
				row.GoroutineRatio = w.GoroutinesPerSession / b.GoroutinesPerSession
			}
		}
		row.CPUNsPerIter, row.CPURatio = med(func(x *harness.Result) float64 { return x.CPUNsPerIter })
		rows = append(rows, row)
	}
	return rows
}

type scaleEntry struct {
	Contender            string  `json:"contender"`
	Sessions             int     `json:"sessions"`
	WallMs               float64 `json:"wall_ms"`
	IdealMs              float64 `json:"ideal_ms"`
	SessionsPerSec       float64 `json:"sessions_per_sec"`
	P50Ms                float64 `json:"p50_ms"`
	P99Ms                float64 `json:"p99_ms"`
	HeapPerSessionKiB    float64 `json:"heap_per_waiting_session_kib"`
	WaitingRSSKiB        float64 `json:"rss_per_waiting_session_kib"`
	GoroutinesPerSession float64 `json:"goroutines_per_waiting_session"`
	PeakRSSMiB           float64 `json:"peak_rss_mib"`
	RSSPerSessionKiB     float64 `json:"rss_per_session_kib"`
	CPUNsPerIter         float64 `json:"cpu_ns_per_iter"`
}

// scaleRow takes throughput from r and the waiting sample from held.
func scaleRow(r, held *harness.Result, latency time.Duration) scaleEntry {
	return scaleEntry{Contender: r.Contender, Sessions: r.Sessions, WallMs: float64(r.WallNs) / 1e6,
		IdealMs:        float64(latency*workload.Iterations) / 1e6,
		SessionsPerSec: r.SessionsPerSec, P50Ms: r.P50Ms, P99Ms: r.P99Ms,
		HeapPerSessionKiB: held.HeapPerSession / 1024, WaitingRSSKiB: held.WaitingRSSPerSession / 1024, GoroutinesPerSession: held.GoroutinesPerSession,
		PeakRSSMiB: float64(r.PeakRSS) / (1 << 20), RSSPerSessionKiB: r.RSSPerSession / 1024, CPUNsPerIter: r.CPUNsPerIter}
}

type appendRow struct {
	Sessions   int                `json:"sessions"`
	Iterations int                `json:"iterations"`
	Metrics    map[string]float64 `json:"metrics"`
}

// workloadPersist is what the agentloop-sqlite contender wrote while
// running the real workload.
type workloadPersist struct {
	EventsPerSession       float64 `json:"events_per_session"`
	EventsPerIteration     float64 `json:"events_per_iteration"`
	DBBytesPer1kIterations float64 `json:"db_bytes_per_1k_iterations"`
	SeqEventsPerSec        float64 `json:"sequential_events_per_sec"`
	ConcEventsPerSec       float64 `json:"concurrent_events_per_sec"`
	ConcSessions           int     `json:"concurrent_sessions"`
}

func workloadPersistence(rep *report) *workloadPersist {
	var w workloadPersist
	var sizes []float64
	for _, r := range rep.Sequential.Rounds {
		if x, ok := r["agentloop-sqlite"]; ok && x.Extra != nil {
			w.EventsPerSession = x.Extra["events_per_session"]
			sizes = append(sizes, x.Extra["db_bytes_per_1k_iterations"])
		}
	}
	if w.EventsPerSession == 0 {
		return nil
	}
	w.EventsPerIteration = w.EventsPerSession / workload.Iterations
	w.DBBytesPer1kIterations = statOf(sizes).Median
	for _, row := range rep.Sequential.Rows {
		if row.Contender == "agentloop-sqlite" {
			w.SeqEventsPerSec = w.EventsPerIteration / (row.NsPerIter.Median / 1e9)
		}
	}
	for _, row := range rep.Concurrent.Rows {
		if row.Contender == "agentloop-sqlite" {
			w.ConcEventsPerSec = row.SessionsPerSec * w.EventsPerSession
			w.ConcSessions = rep.Settings.Conc
		}
	}
	return &w
}

type profile struct {
	Contender   string `json:"contender"`
	SessionsRun int    `json:"sessions"`
	CPUTop      string `json:"cpu_top"`
	CPUCum      string `json:"cpu_cum_agentloop"`
	AllocsTop   string `json:"allocs_top"`
	AllocsCum   string `json:"allocs_cum_agentloop"`
	CPUFile     string `json:"cpu_file"`
	AllocsFile  string `json:"allocs_file"`
}

type target struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

func targets(rep *report) []target {
	var out []target
	seq := map[string]seqRow{}
	for _, r := range rep.Sequential.Rows {
		seq[r.Contender] = r
	}
	conc := map[string]concRow{}
	for _, r := range rep.Concurrent.Rows {
		conc[r.Contender] = r
	}
	miss := func(got, limit float64) string {
		if got <= limit {
			return ""
		}
		return fmt.Sprintf(" — missed by %.0f%%", (got/limit-1)*100)
	}
	// The product's path (the service) may add its lease and fence to
	// what the bare runner costs; a plain tool waits for a commit before
	// each call. A contender's plain twin without a limit here is reported
	// only (PostgreSQL's: one durable commit per call is its floor).
	seqLimits := []struct {
		name  string
		limit float64
	}{
		{"agentloop-service-sqlite", 1.2}, {"agentloop-service-sqlite-plain", 1.3},
		{"agentloop-sqlite", 1.15}, {"agentloop-sqlite-plain", 1.3}, {"agentloop-memory", 1.1},
		{"agentloop-service-postgres", 1.25},
		{"agentloop-postgres", 1.15}, {"agentloop-postgres-endbehind", 1.15},
	}
	floors := map[string]floorRow{}
	for _, f := range rep.Sequential.Floors {
		floors[f.Contender] = f
	}
	for _, l := range seqLimits {
		if r, ok := seq[l.name]; ok {
			got, limit := r.WallRatio.Median, l.limit
			floor := ""
			if f, ok := floors[l.name]; ok {
				floor = fmt.Sprintf("; its floor, %s, %.2f×", f.Floor, f.FloorRatio.Median)
			}
			out = append(out, target{Name: "sequential wall per iteration, " + l.name, Want: fmt.Sprintf("≤ %.2f× baseline", limit),
				Got: fmt.Sprintf("%.2f× (rounds %.2f–%.2f)%s%s", got, r.WallRatio.Min, r.WallRatio.Max, miss(got, limit), floor), Met: got <= limit})
		}
	}
	fewest, fewestName := math.Inf(1), ""
	for _, r := range rep.Sequential.Rows {
		if isFloor(r.Contender) || strings.HasPrefix(r.Contender, "agentloop") {
			continue
		}
		if r.AllocsPerIter.Median < fewest {
			fewest, fewestName = r.AllocsPerIter.Median, r.Contender
		}
	}
	for _, name := range []string{"agentloop-sqlite", "agentloop-memory"} {
		if r, ok := seq[name]; ok && fewestName != "" {
			got := r.AllocsPerIter.Median
			out = append(out, target{Name: "allocations per iteration, " + name, Want: fmt.Sprintf("fewest of all frameworks (best peer: %s, %.0f)", fewestName, fewest),
				Got: fmt.Sprintf("%.0f%s", got, miss(got, fewest)), Met: got < fewest})
		}
	}
	// PostgreSQL's server shares the CPUs with the sessions it serves.
	concWall := map[string]float64{"agentloop-service-postgres": 1.4}
	for _, name := range []string{"agentloop-service-sqlite", "agentloop-sqlite", "agentloop-service-postgres", "agentloop-postgres", "agentloop-postgres-endbehind", "agentloop-memory"} {
		if r, ok := conc[name]; ok {
			limit := concWall[name]
			if limit == 0 {
				limit = 1.3
			}
			out = append(out, target{Name: fmt.Sprintf("%d concurrent, wall, %s", rep.Settings.Conc, name), Want: fmt.Sprintf("≤ %.1f× baseline", limit),
				Got: fmt.Sprintf("%.2f× (rounds %.2f–%.2f)%s", r.WallRatio.Median, r.WallRatio.Min, r.WallRatio.Max, miss(r.WallRatio.Median, limit)), Met: r.WallRatio.Median <= limit})
			out = append(out, target{Name: fmt.Sprintf("%d concurrent, peak RSS per session, %s", rep.Settings.Conc, name), Want: "≤ 1.3× baseline",
				Got: fmt.Sprintf("%.2f× (rounds %.2f–%.2f; %.1f KiB vs %.1f KiB)%s", r.RSSRatio.Median, r.RSSRatio.Min, r.RSSRatio.Max, r.RSSPerSessionKiB.Median, baseRSS(conc), miss(r.RSSRatio.Median, 1.3)),
				Met: r.RSSRatio.Median <= 1.3})
		}
	}
	for _, s := range rep.Scale {
		if !strings.HasPrefix(s.Contender, "agentloop") {
			continue
		}
		out = append(out, target{Name: fmt.Sprintf("%d waiting sessions, heap each, %s", s.Sessions, s.Contender), Want: "< 64 KiB",
			Got: fmt.Sprintf("%.1f KiB%s", s.HeapPerSessionKiB, miss(s.HeapPerSessionKiB, 64)), Met: s.HeapPerSessionKiB < 64})
	}
	return out
}

func baseRSS(conc map[string]concRow) float64 { return conc["baseline"].RSSPerSessionKiB.Median }

// write prints the Markdown report and writes it to mdPath (unless "-"),
// and the whole report as JSON to jsonPath (when set).
func write(rep *report, mdPath, jsonPath string) error {
	if jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
			return err
		}
		logf("wrote %s", jsonPath)
	}
	md := markdown(rep)
	fmt.Print(md)
	if mdPath == "-" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(mdPath), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
		return err
	}
	logf("wrote %s", mdPath)
	return nil
}

func us(ns float64) string { return fmt.Sprintf("%.1f", ns/1e3) }

func x(r float64) string {
	if math.IsNaN(r) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r)
}

func markdown(rep *report) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	s := rep.Settings
	p("# agentloop vs the Go agent frameworks\n\n")
	if rep.Stamp != "" {
		p("%s\n\n", rep.Stamp)
	}
	if rep.Command != "" {
		p("Command: `%s`\n\n", rep.Command)
	}
	p("Workload: %s; one tool `add`; a fake OpenAI-compatible server in its own process on loopback; every contender in its own process with the same `http.Client`. ", rep.Workload)
	p("Every session is checked: exactly %d tool calls executed, final text %q (and the server checks every tool result it is sent).\n\n", workload.K, workload.Final)
	p("Machine: %s, %d CPUs, %s, %s. Load average at start %s, at end %s", rep.CPU, rep.NumCPU, rep.Platform, rep.GoVersion, rep.LoadStart, rep.LoadEnd)
	if loadHigh(rep.LoadStart, rep.NumCPU) || loadHigh(rep.LoadEnd, rep.NumCPU) {
		p(" — **the machine was busy with other work; wall times are noisy, CPU time and allocations much less so**")
	}
	p(".\n\nSettings: sequential %d rounds × %d sessions (warm-up %d) per contender, latency 0; concurrency %d sessions at once, %s latency, %d round(s); scale %d sessions, %s latency; SQLite append benchmark %d iterations per session count.\n\n",
		s.Rounds, s.SeqSessions, s.SeqWarmup, s.Conc, s.ConcLatency, s.ConcRounds, s.Scale, s.ScaleLatency, s.PersistIters)

	if len(rep.Targets) > 0 {
		p("## Targets\n\n| target | want | got | |\n|---|---|---|---|\n")
		for _, t := range rep.Targets {
			mark := "missed"
			if t.Met {
				mark = "met"
			}
			p("| %s | %s | %s | %s |\n", t.Name, t.Want, t.Got, mark)
		}
		p("\n")
	}

	if len(rep.Sequential.Rows) > 0 {
		p("## 1. Sequential (per model round trip, latency 0)\n\n")
		p("Wall and CPU in µs per iteration (one model round trip plus the tool call it asked for); min / median / max over %d rounds. Ratios are to the baseline measured in the same round (median of the per-round ratios). CPU is the contender process's user+system time (getrusage), allocations from runtime.MemStats in the contender process; the fake server's own CPU is not counted.\n\n", s.Rounds)
		p("| contender | wall µs/iter (min / med / max) | wall × base | CPU µs/iter | CPU × base | allocs/iter | allocs × base | bytes/iter | bytes × base | goroutines started/iter |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range rep.Sequential.Rows {
			p("| %s | %s / %s / %s | %s | %s | %s | %.0f | %s | %.0f | %s | %.2f |\n", r.Contender,
				us(r.NsPerIter.Min), us(r.NsPerIter.Median), us(r.NsPerIter.Max), x(r.WallRatio.Median),
				us(r.CPUNsPerIter.Median), x(r.CPURatio.Median), r.AllocsPerIter.Median, x(r.AllocsRatio.Median), r.BytesPerIter.Median, x(r.BytesRatio.Median), r.Goroutines.Median)
		}
		p("\n")
	}
	if len(rep.Sequential.Floors) > 0 {
		p("### Floors: the commits a durable loop must wait for\n\n")
		p("A plain tool (not declared idempotent) may run only once the reply that asked for it is durable, so every call waits for a commit; a session whose end is durable when Run returns waits for one commit at its end. A floor is the bare loop plus those commits and nothing else: one row each, committed alone and waited for, in the same kind of database (`baseline -commit sqlite|postgres -at call|end`). Wall per iteration, medians of the per-round ratios, over the rounds in which the contender, its floor and the baseline all ran.\n\n")
		p("| contender | floor | floor × base | contender × floor |\n|---|---|---|---|\n")
		for _, f := range rep.Sequential.Floors {
			p("| %s | %s | %s (rounds %.2f–%.2f) | %s (rounds %.2f–%.2f) |\n", f.Contender, f.Floor,
				x(f.FloorRatio.Median), f.FloorRatio.Min, f.FloorRatio.Max, x(f.Ratio.Median), f.Ratio.Min, f.Ratio.Max)
		}
		p("\n")
	}

	if len(rep.Concurrent.Rows) > 0 {
		p("## 2. Concurrency (%d sessions at once, %s per model reply)\n\n", s.Conc, s.ConcLatency)
		p("Ideal wall time is %d × %s = %s; on this machine the fake server and the contender share %d CPUs, so a burst this size is CPU-bound and wall time mostly measures CPU per round trip (the server's included). Peak RSS per session is (peak RSS during the burst − RSS before it) / sessions, with the peak (VmHWM) reset before the burst; medians over %d round(s). Heap, RSS and goroutines per *waiting* session come from a separate run in which the fake server holds every session's first model call until all %d are waiting, then the contender samples itself (live heap after a GC, VmRSS, goroutines — the harness's own goroutine per session included for every contender) and the server releases them.\n\n",
			workload.Iterations, s.ConcLatency, s.ConcLatency*workload.Iterations, rep.NumCPU, s.ConcRounds, s.Conc)
		p("| contender | wall ms | wall × base | sessions/s | p50 ms | p99 ms | peak RSS MiB | peak RSS/session KiB | × base | heap/waiting session KiB | × base | RSS/waiting session KiB | × base | goroutines/waiting session | × base | CPU µs/iter | CPU × base |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range rep.Concurrent.Rows {
			p("| %s | %.0f | %s | %.0f | %.0f | %.0f | %.1f | %.1f | %s | %.1f | %s | %.1f | %s | %.2f | %s | %s | %s |\n", r.Contender,
				r.WallMs.Median, x(r.WallRatio.Median), r.SessionsPerSec, r.P50Ms, r.P99Ms, r.PeakRSSMiB,
				r.RSSPerSessionKiB.Median, x(r.RSSRatio.Median), r.HeapPerSessionKiB, x(r.HeapRatio), r.WaitingRSSKiB, x(r.WaitingRSSRatio),
				r.GoroutinesPerSession, x(r.GoroutineRatio), us(r.CPUNsPerIter), x(r.CPURatio))
		}
		p("\n")
	}

	if len(rep.Scale) > 0 {
		p("## 3. Scale (%d sessions at once, %s per model reply, over HTTP)\n\n", s.Scale, s.ScaleLatency)
		p("Throughput, latencies and peak RSS from one run; heap, RSS and goroutines per waiting session from a second run in which the server holds every session's first model call until all %d wait (live heap after a GC minus the heap before the burst, divided by the sessions). With %d CPUs shared with the fake server, throughput is CPU-bound, far from the latency-bound ideal.\n\n", s.Scale, rep.NumCPU)
		p("| contender | wall ms (ideal) | sessions/s | p50 ms | p99 ms | heap/waiting session KiB | RSS/waiting session KiB | goroutines/waiting session | peak RSS MiB | peak RSS/session KiB | CPU µs/iter |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range rep.Scale {
			p("| %s | %.0f (%.0f) | %.0f | %.0f | %.0f | %.1f | %.1f | %.2f | %.1f | %.1f | %s |\n", r.Contender, r.WallMs, r.IdealMs, r.SessionsPerSec,
				r.P50Ms, r.P99Ms, r.HeapPerSessionKiB, r.WaitingRSSKiB, r.GoroutinesPerSession, r.PeakRSSMiB, r.RSSPerSessionKiB, us(r.CPUNsPerIter))
		}
		p("\n")
	}

	if len(rep.Persistence.Append) > 0 || rep.Persistence.Workload != nil {
		p("## 4. Persistence (SQLite store)\n\n")
		if len(rep.Persistence.Append) > 0 {
			p("store/sqlite `BenchmarkAppend` (storetest.BenchAppend: synthetic iterations of 5 events, one Append per event, one goroutine per session):\n\n")
			p("| sessions | iterations | events/s | p50 append µs | p99 append µs | DB MiB per 1,000 iterations |\n|---|---|---|---|---|---|\n")
			for _, r := range rep.Persistence.Append {
				p("| %d | %d | %.0f | %.1f | %.1f | %.3f |\n", r.Sessions, r.Iterations, r.Metrics["events/s"], r.Metrics["p50-µs"], r.Metrics["p99-µs"], r.Metrics["MiB/1k-iter"])
			}
			p("\n")
		}
		if w := rep.Persistence.Workload; w != nil {
			p("What agentloop-sqlite wrote running the workload above: %.0f events per session (%.1f per iteration); database %.1f KiB per 1,000 iterations (file + WAL after Close); %.0f events/s sequentially, %.0f events/s with %d sessions at once.\n\n",
				w.EventsPerSession, w.EventsPerIteration, w.DBBytesPer1kIterations/1024, w.SeqEventsPerSec, w.ConcEventsPerSec, w.ConcSessions)
		}
	}

	for _, pr := range rep.Profiles {
		p("## Profile: %s, sequential\n\n", pr.Contender)
		p("CPU profile of %d sessions (%d iterations); allocation profile (MemProfileRate 512, so counts are estimates) of a separate run of %d sessions plus %d warm-up, over the whole process.\n\n",
			pr.SessionsRun, pr.SessionsRun*workload.Iterations, rep.Settings.SeqSessions, rep.Settings.SeqWarmup)
		p("CPU, top by flat time:\n\n```\n%s\n```\n\nCPU, agentloop's own functions by cumulative time:\n\n```\n%s\n```\n\nAllocations (objects), top by flat:\n\n```\n%s\n```\n\nAllocations (objects), agentloop's own functions by cumulative:\n\n```\n%s\n```\n\n",
			pr.CPUTop, pr.CPUCum, pr.AllocsTop, pr.AllocsCum)
	}

	if len(rep.Sequential.Rows) > 0 {
		p("## Contenders\n\n| contender | what runs |\n|---|---|\n")
		for _, r := range rep.Sequential.Rows {
			p("| %s | %s |\n", r.Contender, r.Notes)
		}
		p("\n")
	}
	if len(rep.Versions) > 0 {
		p("Peer versions (bench/peers/go.mod): ")
		keys := make([]string, 0, len(rep.Versions))
		for k := range rep.Versions {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				p(", ")
			}
			p("%s %s", k, rep.Versions[k])
		}
		p(".\n\n")
	}
	if len(rep.Failures) > 0 {
		p("## Failures\n\n")
		keys := make([]string, 0, len(rep.Failures))
		for k := range rep.Failures {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p("- **%s**: %s\n", k, strings.ReplaceAll(rep.Failures[k], "\n", " "))
		}
		p("\n")
	}
	return b.String()
}

func loadHigh(load string, cpus int) bool {
	var one float64
	if _, err := fmt.Sscan(load, &one); err != nil {
		return false
	}
	return one > float64(cpus)
}
