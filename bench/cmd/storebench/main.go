// Command storebench measures the session stores as a server uses them:
// S sessions append at once, one goroutine each, every event in its own
// Append (as the runner writes them), five events an iteration. For SQLite
// (the baseline, measured in the same run) and PostgreSQL (a durable
// server it starts: fsync on, synchronous_commit on) it prints
// iterations/s and the p50 / p99 latency of one Append at 1, 100 and
// 1,000 concurrent sessions, with PostgreSQL's ratio to SQLite — and, to
// show what group commit buys, PostgreSQL with one Append per transaction.
//
//	go run ./bench/cmd/storebench [-events 5000] [-sessions 1,100,1000] [-pg postgres://…] [-out FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	benchresult "github.com/agentloop/agentloop/bench/internal/result"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/postgres"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/store/storetest"
)

type result struct {
	itersPerSec float64
	p50, p99    time.Duration
}

func main() {
	events := flag.Int("events", 5000, "events appended per measurement (five make an iteration)")
	sessionsFlag := flag.String("sessions", "1,100,1000", "concurrent sessions to measure at")
	pgURL := flag.String("pg", "", "a PostgreSQL server to use (its postgres database URL); default: start a durable one from the installed binaries")
	leases := flag.Int("leases", 1000, "leases renewed one by one and then in one RenewAll, as a server running that many sessions renews them (0: not measured)")
	out := flag.String("out", benchresult.Path("store"), "where the result goes (overwritten); - for standard output only")
	flag.Parse()
	var counts []int
	for _, f := range strings.Split(*sessionsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "storebench: -sessions: %q is not a count\n", f)
			os.Exit(2)
		}
		counts = append(counts, n)
	}
	if *pgURL == "" {
		url, stop, err := pgtest.StartServer(true)
		if err != nil {
			fmt.Fprintf(os.Stderr, "storebench: %v (or pass -pg URL)\n", err)
			os.Exit(1)
		}
		defer stop()
		*pgURL = url
	}
	dir, err := os.MkdirTemp("", "storebench")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)

	type config struct {
		name string
		open func(n int) (store.Store, error)
	}
	db := 0
	newDB := func() string {
		db++
		name := fmt.Sprintf("bench_%d_%d", os.Getpid(), db)
		conn, err := pgx.Connect(context.Background(), *pgURL)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		rest, query, _ := strings.Cut(*pgURL, "?")
		url := rest[:strings.LastIndex(rest, "/")] + "/" + name
		if query != "" {
			url += "?" + query
		}
		return url
	}
	configs := []config{
		{"SQLite (baseline)", func(n int) (store.Store, error) {
			return sqlite.Open(filepath.Join(dir, fmt.Sprintf("s%d.db", n)))
		}},
		{"PostgreSQL", func(n int) (store.Store, error) {
			return postgres.Open(context.Background(), newDB(), postgres.WithoutListen())
		}},
		{"PostgreSQL, synchronous_commit off", func(n int) (store.Store, error) {
			// SQLite's default durability: a crash of the process loses
			// nothing, a power loss the last commits.
			return postgres.Open(context.Background(), withParam(newDB(), "synchronous_commit=off"), postgres.WithoutListen())
		}},
		{"PostgreSQL, one append per commit", func(n int) (store.Store, error) {
			return postgres.Open(context.Background(), newDB(), postgres.WithoutListen(), postgres.WithMaxBatch(1))
		}},
	}
	results := map[string]map[int]result{}
	for _, c := range configs {
		results[c.name] = map[int]result{}
		for _, n := range counts {
			st, err := c.open(n)
			if err != nil {
				fmt.Fprintf(os.Stderr, "storebench: %s: %v\n", c.name, err)
				os.Exit(1)
			}
			r, err := measure(st, n, *events)
			st.Close()
			if err != nil {
				fmt.Fprintf(os.Stderr, "storebench: %s, %d sessions: %v\n", c.name, n, err)
				os.Exit(1)
			}
			results[c.name][n] = r
			fmt.Fprintf(os.Stderr, "%-36s %5d sessions: %9.0f iterations/s  p50 %8s  p99 %8s\n", c.name, n, r.itersPerSec, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond))
		}
	}

	type renewal struct {
		name          string
		single, batch time.Duration
	}
	var renewed []renewal
	if *leases > 0 {
		for _, c := range configs[:2] {
			st, err := c.open(-1)
			if err != nil {
				fmt.Fprintf(os.Stderr, "storebench: %s: %v\n", c.name, err)
				os.Exit(1)
			}
			single, batch, err := renewTimes(st, *leases)
			st.Close()
			if err != nil {
				fmt.Fprintf(os.Stderr, "storebench: %s, renewing %d leases: %v\n", c.name, *leases, err)
				os.Exit(1)
			}
			renewed = append(renewed, renewal{c.name, single, batch})
			fmt.Fprintf(os.Stderr, "%-36s renew %d leases: one by one %v, RenewAll %v\n", c.name, *leases, single.Round(time.Microsecond), batch.Round(time.Microsecond))
		}
	}

	cross, err := crossServer(newDB())
	if err != nil {
		fmt.Fprintf(os.Stderr, "storebench: across servers: %v\n", err)
		os.Exit(1)
	}

	w, closeOut, err := benchresult.Create(*out, "Store benchmark")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer closeOut()
	fmt.Fprintf(w, "`go run ./bench/cmd/storebench -events %d` on %s/%s, %d CPUs. Every event is its own Append from its session's goroutine; five events make an iteration. PostgreSQL %s runs durable (fsync, synchronous_commit on: every commit is on disk before Append returns) on this machine's disk; SQLite runs as agentloop opens it (WAL, synchronous=NORMAL: a process crash loses nothing, a power loss may lose the last commits), which the \"synchronous_commit off\" row matches. Ratios are against SQLite at the same concurrency, measured in the same run.\n\n",
		*events, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), serverVersion(*pgURL))
	fmt.Fprintln(w, "| store | sessions | iterations/s | × SQLite | p50 append | p99 append |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, c := range configs {
		for _, n := range counts {
			r, base := results[c.name][n], results[configs[0].name][n]
			fmt.Fprintf(w, "| %s | %d | %.0f | %.2f | %s | %s |\n", c.name, n, r.itersPerSec, r.itersPerSec/base.itersPerSec, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond))
		}
	}
	if len(renewed) > 0 {
		fmt.Fprintf(w, "\nRenewing the leases of %d running sessions, as a server does three times per lease TTL: one `Renew` each (one commit each), then one `RenewAll` (one commit), in the same run.\n\n", *leases)
		fmt.Fprintln(w, "| store | one by one | RenewAll | × one by one |")
		fmt.Fprintln(w, "|---|---:|---:|---:|")
		for _, r := range renewed {
			fmt.Fprintf(w, "| %s | %s | %s | %.3f |\n", strings.TrimSuffix(r.name, " (baseline)"), r.single.Round(time.Microsecond), r.batch.Round(time.Microsecond), float64(r.batch)/float64(r.single))
		}
	}
	fmt.Fprintf(w, "\nAcross servers (two stores on one durable PostgreSQL database, as two `agentloop serve`): from the moment one starts an Append to the moment the other, told by NOTIFY, has read the event — %d events of 10 sessions, one every 2 ms: p50 %s, p99 %s, max %s.\n",
		cross.n, cross.p50.Round(time.Microsecond), cross.p99.Round(time.Microsecond), cross.max.Round(time.Microsecond))
}

// renewTimes takes n leases on st and times renewing them all, first one
// Renew each, then in one RenewAll.
func renewTimes(st store.Store, n int) (single, batch time.Duration, err error) {
	rn, ok := st.(store.LeaseRenewer)
	if !ok {
		return 0, 0, fmt.Errorf("%T has no RenewAll", st)
	}
	ctx := context.Background()
	held := make([]store.Lease, n)
	for i := range held {
		if held[i], err = st.Acquire(ctx, fmt.Sprintf("lease-%d", i), "storebench", time.Minute); err != nil {
			return 0, 0, err
		}
	}
	t0 := time.Now()
	for _, l := range held {
		if _, err := st.Renew(ctx, l, time.Minute); err != nil {
			return 0, 0, err
		}
	}
	single = time.Since(t0)
	t0 = time.Now()
	got, err := rn.RenewAll(ctx, held, time.Minute)
	if err != nil {
		return 0, 0, err
	}
	if len(got) != n {
		return 0, 0, fmt.Errorf("RenewAll renewed %d of %d leases", len(got), n)
	}
	return single, time.Since(t0), nil
}

type crossResult struct {
	n             int
	p50, p99, max time.Duration
}

// crossServer measures how soon an event appended through one store is
// read through another on the same database.
func crossServer(url string) (crossResult, error) {
	ctx := context.Background()
	a, err := postgres.Open(ctx, url)
	if err != nil {
		return crossResult{}, err
	}
	defer a.Close()
	b, err := postgres.Open(ctx, url)
	if err != nil {
		return crossResult{}, err
	}
	defer b.Close()
	const sessions, per = 10, 100
	var mu sync.Mutex
	sent := map[string]time.Time{} // session/seq → when its Append started
	key := func(id string, seq int64) string { return fmt.Sprintf("%s/%d", id, seq) }
	notices := make(chan store.Notice, sessions*per)
	defer b.Watch(func(n store.Notice) { notices <- n })()
	var lat []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]int64{}
		for len(lat) < sessions*per {
			n := <-notices
			evs, err := b.LoadAfter(ctx, n.SessionID, seen[n.SessionID])
			if err != nil {
				continue
			}
			now := time.Now()
			mu.Lock()
			for _, e := range evs {
				lat = append(lat, now.Sub(sent[key(e.SessionID, e.Seq)]))
				seen[e.SessionID] = e.Seq
			}
			mu.Unlock()
		}
	}()
	for seq := int64(1); seq <= per; seq++ {
		for g := range sessions {
			id := fmt.Sprintf("cross-%d", g)
			mu.Lock()
			sent[key(id, seq)] = time.Now()
			mu.Unlock()
			if err := a.Append(ctx, storetest.FakeEvent(id, seq)); err != nil {
				return crossResult{}, err
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		return crossResult{}, fmt.Errorf("only %d of %d events reached the other store", len(lat), sessions*per)
	}
	slices.Sort(lat)
	return crossResult{n: len(lat), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], max: lat[len(lat)-1]}, nil
}

// withParam adds a run-time parameter to a connection URL.
func withParam(url, kv string) string {
	if strings.Contains(url, "?") {
		return url + "&" + kv
	}
	return url + "?" + kv
}

func serverVersion(url string) string {
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		return "?"
	}
	defer conn.Close(context.Background())
	var v string
	conn.QueryRow(context.Background(), "SHOW server_version").Scan(&v)
	return v
}

// measure appends about total events over n sessions and times each Append.
func measure(st store.Store, n, total int) (result, error) {
	ctx := context.Background()
	perSession := max(total/n, 5)
	work := make([][]loop.Event, n)
	for g := range n {
		id := fmt.Sprintf("bench-%04d", g)
		if err := st.Append(ctx, storetest.FakeEvent(id, 1)); err != nil {
			return result{}, err
		}
		work[g] = storetest.FakeEvents(id, 2, 1+int64(perSession))
	}
	lat := make([][]time.Duration, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range n {
		wg.Go(func() {
			for _, e := range work[g] {
				t0 := time.Now()
				if err := st.Append(ctx, e); err != nil {
					errs <- err
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return result{
		itersPerSec: float64(len(all)) / 5 / elapsed.Seconds(),
		p50:         all[len(all)/2],
		p99:         all[len(all)*99/100],
	}, nil
}
