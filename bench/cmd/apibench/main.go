// Command apibench measures the HTTP API under load, in one process on
// loopback with the SQLite store and the scripted model:
//
//  1. watchers: W clients follow S running sessions over Server-Sent
//     Events; for every event a client receives, the latency from the
//     moment the runner recorded it (its time) to the moment the client
//     read it — p50 / p99 / max;
//
//  2. sessions: N sessions started through POST /v1/sessions at once, and
//     the time until all of them completed (checked one by one).
//
//     go run ./bench/cmd/apibench [-watchers 100] [-sessions 10] [-steps 20] [-concurrent 1000]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/bench/internal/profile"
	benchresult "github.com/agentloop/agentloop/bench/internal/result"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/sqlite"
)

// stdout is where the result is printed: standard output and the
// result's file.
var stdout io.Writer = os.Stdout

func main() {
	watchers := flag.Int("watchers", 100, "SSE clients")
	sessions := flag.Int("sessions", 10, "sessions the watchers follow (watchers spread over them)")
	steps := flag.Int("steps", 20, "tool-calling steps per watched session")
	delay := flag.Duration("delay", 20*time.Millisecond, "scripted model latency per step of a watched session")
	concurrent := flag.Int("concurrent", 1000, "sessions started at once through the API (0 skips it)")
	outPath := flag.String("out", benchresult.Path("api"), "where the result goes (overwritten); - for standard output only")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	stopProfile, err := profile.StartCPU(*cpuProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apibench:", err)
		os.Exit(1)
	}
	w, closeOut, err := benchresult.Create(*outPath, "The HTTP API under load")
	if err == nil {
		stdout = w
		err = run(*watchers, *sessions, *steps, *delay, *concurrent)
		err = errors.Join(err, closeOut())
	}
	// Stopped before any exit: a profile left running is cut short.
	if err = errors.Join(err, stopProfile()); err != nil {
		fmt.Fprintln(os.Stderr, "apibench:", err)
		os.Exit(1)
	}
}

type bench struct {
	url, dir string
}

func run(watchers, sessions, steps int, delay time.Duration, concurrent int) error {
	dir, err := os.MkdirTemp("", "apibench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(filepath.Join(dir, "s.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	svc, err := service.New(service.Config{Store: st, Runner: (&assemble.Resolver{}).RunnerConfig(st, price.Default())})
	if err != nil {
		return err
	}
	defer svc.Close()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o700)
	srv := httptest.NewServer(server.New(server.Config{Service: svc, Heartbeat: time.Hour,
		Defaults: server.Defaults{Approval: "auto", Workspaces: ws, AllowScripts: true}}))
	defer srv.Close()
	b := &bench{url: srv.URL, dir: dir}
	fmt.Fprintf(stdout, "agentloop API on loopback, SQLite, GOMAXPROCS=%d, %s\n\n", runtime.GOMAXPROCS(0), runtime.Version())
	if watchers > 0 {
		if err := b.watch(watchers, sessions, steps, delay); err != nil {
			return err
		}
	}
	if concurrent > 0 {
		return b.many(concurrent)
	}
	return nil
}

// script writes a scripted model: steps tool calls after delay, then an answer.
func (b *bench) script(steps int, delay time.Duration) (string, error) {
	var parts []string
	for i := range steps {
		parts = append(parts, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}],"delay":%q,"usage":{"input_tokens":100,"output_tokens":10}}`, i, i, delay.String()))
	}
	parts = append(parts, `{"text":"done","usage":{"input_tokens":100,"output_tokens":10}}`)
	path := filepath.Join(b.dir, fmt.Sprintf("script-%d-%d.json", steps, delay))
	return path, os.WriteFile(path, []byte(`{"steps":[`+strings.Join(parts, ",")+`]}`), 0o600)
}

func (b *bench) watch(watchers, sessions, steps int, delay time.Duration) error {
	script, err := b.script(steps, delay)
	if err != nil {
		return err
	}
	// Start the sessions paused behind a slow first step, attach the
	// watchers, then let them run: each watcher replays from 0 and
	// follows live; only live events (recorded after it attached) count.
	ids := make([]string, sessions)
	for i := range ids {
		resp, err := http.Post(b.url+"/v1/sessions", "application/json", strings.NewReader(fmt.Sprintf(`{"task":"write","model":"script:%s","max_iterations":%d}`, script, steps+5)))
		if err != nil {
			return err
		}
		var c struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		ids[i] = c.ID
	}
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, watchers)
	for w := range watchers {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", b.url+"/v1/sessions/"+id+"/events", nil)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			attached := time.Now()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			var mine []time.Duration
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				now := time.Now()
				var ev struct {
					Type string
					Time time.Time
				}
				if json.Unmarshal([]byte(data), &ev) != nil || ev.Time.IsZero() {
					continue
				}
				if ev.Time.After(attached) {
					mine = append(mine, now.Sub(ev.Time))
				}
				if ev.Type == "session.ended" {
					break
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(ids[w%sessions])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	if len(lat) == 0 {
		return fmt.Errorf("no live events were measured")
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Fprintf(stdout, "## %d SSE watchers on %d sessions (%d steps, model %s per step)\n\n", watchers, sessions, steps, delay)
	fmt.Fprintln(stdout, "| live events measured | p50 | p90 | p99 | max |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|")
	fmt.Fprintf(stdout, "| %d | %s | %s | %s | %s |\n\n", len(lat), q(0.50).Round(10*time.Microsecond), q(0.90).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
	fmt.Fprintln(stdout, "(latency: from the event's time — when the runner recorded it, before its commit — to the client reading it)")
	fmt.Fprintln(stdout)
	return nil
}

func (b *bench) many(n int) error {
	script, err := b.script(3, 0)
	if err != nil {
		return err
	}
	start := time.Now()
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 64) // at most 64 requests in flight
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			resp, err := http.Post(b.url+"/v1/sessions", "application/json", strings.NewReader(fmt.Sprintf(`{"task":"write","model":"script:%s"}`, script)))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				errs <- fmt.Errorf("create: HTTP %d", resp.StatusCode)
				return
			}
			var c struct{ ID string }
			json.NewDecoder(resp.Body).Decode(&c)
			ids[i] = c.ID
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	created := time.Since(start)
	for _, id := range ids {
		for {
			resp, err := http.Get(b.url + "/v1/sessions/" + id)
			if err != nil {
				return err
			}
			var st struct{ Status, Answer string }
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if st.Status == "completed" && st.Answer == "done" {
				break
			}
			if st.Status != "running" {
				return fmt.Errorf("session %s ended %s", id, st.Status)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	all := time.Since(start)
	fmt.Fprintf(stdout, "## %d sessions started at once through POST /v1/sessions (4 model calls, 3 file writes each)\n\n", n)
	fmt.Fprintln(stdout, "| sessions | all created after | all completed after | sessions/s |")
	fmt.Fprintln(stdout, "|---|---|---|---|")
	fmt.Fprintf(stdout, "| %d | %s | %s | %.0f |\n", n, created.Round(time.Millisecond), all.Round(time.Millisecond), float64(n)/all.Seconds())
	return nil
}
