// Command agentloop is the agentloop contender of the comparison: one
// loop.Runner over the OpenAI-compatible provider (model/provider, non-
// streaming: no OnDelta), the add tool in a tool.Registry (schema compiled
// once), and either a durable store (SQLite, or PostgreSQL: every event
// written) or the in-memory store.
//
//	agentloop -store sqlite|postgres|memory [-pg URL] -server URL -mode seq|conc …
//
// With -store postgres and no -pg (nor $AGENTLOOP_BENCH_POSTGRES), the
// contender starts a PostgreSQL server of its own (pgtest.StartServer: the
// installed binaries, fsync on, as in production) for the run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/workload"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/store/postgres"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/tool"
)

// log is what the runner needs of a store, plus Close.
type log interface {
	loop.Log
	Close() error
}

func main() {
	store := flag.String("store", "sqlite", "sqlite or postgres (durable, every event written) or memory")
	pg := flag.String("pg", os.Getenv("AGENTLOOP_BENCH_POSTGRES"), "-store postgres: a server's URL (postgres://…; a database is made for the run and dropped); empty: start a server of its own")
	endBehind := flag.Bool("end-behind", false, "loop.Config.EndBehind (-store postgres): Run returns before a session's last commit lands; the harness waits for the commits (Runner.Sync) inside the measured time. SQLite needs none: it journals a session's end, durable at once, and commits it behind the return")
	harness.Main(func() harness.Contender {
		notes := map[string]string{
			"sqlite":   "loop.Runner + model/provider openai (non-streaming) + store/sqlite: every event durable (a session's end journaled before Run returns, committed behind it; every commit awaited inside the measured time, Runner.Sync)",
			"postgres": "loop.Runner + model/provider openai (non-streaming) + store/postgres (fsync on): every event durable",
			"memory":   "loop.Runner + model/provider openai (non-streaming) + store/memory",
		}
		name, note := "agentloop-"+*store, notes[*store]
		if *endBehind && *store == "sqlite" {
			fmt.Fprintln(os.Stderr, "agentloop: -end-behind changes nothing with -store sqlite: a session's end is journaled and committed behind the return already")
			os.Exit(2)
		}
		if *endBehind {
			name += "-endbehind"
			note += "; Run returns before the session's last commit lands (loop.Config.EndBehind), every commit awaited inside the measured time (Runner.Sync)"
		}
		return harness.Contender{Name: name, Notes: note,
			New: func(ctx context.Context, env harness.Env) (*harness.Runtime, error) {
				return newRuntime(ctx, env, *store, *pg, *endBehind)
			}}
	})
}

// pure marks a tool that computes its result from its arguments alone:
// running it twice is harmless, so the runner need not make the reply
// that asked for it durable first (tool.Idempotent).
type pure struct{ tool.Tool }

func (pure) Idempotent() bool { return true }

// AddTool is add over workload.Add: a pure function, declared so.
func addTool() tool.Tool {
	return pure{tool.Func(model.ToolSpec{Name: workload.ToolName, Description: workload.ToolDescription, Parameters: json.RawMessage(workload.ToolSchema)},
		func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			sum, err := workload.AddJSON(ctx, args)
			if err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Output: strconv.Itoa(sum)}, nil
		})}
}

func newRuntime(ctx context.Context, env harness.Env, store, pgURL string, endBehind bool) (*harness.Runtime, error) {
	var st log
	dbPath := filepath.Join(env.Dir, "agentloop.db")
	switch store {
	case "sqlite":
		s, err := sqlite.Open(dbPath)
		if err != nil {
			return nil, err
		}
		st = s
	case "postgres":
		s, err := openPostgres(ctx, pgURL)
		if err != nil {
			return nil, err
		}
		st = s
	case "memory":
		st = memory.New()
	default:
		return nil, fmt.Errorf("-store %q: want sqlite, postgres or memory", store)
	}
	m, err := provider.Open("openai/"+workload.ModelName, provider.Options{BaseURL: env.BaseURL, APIKey: workload.APIKey, HTTPClient: env.HTTPClient})
	if err != nil {
		return nil, err
	}
	runner, err := loop.New(loop.Config{
		Model: m, ModelName: workload.ModelName, Tools: tool.MustRegistry(addTool()), Log: st,
		SystemPrompt: workload.SystemPrompt, Limits: loop.Limits{MaxIterations: workload.Iterations + 4},
		EndBehind: endBehind,
	})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var sessions int
	var lastID string
	run := func(ctx context.Context) (string, error) {
		s, err := runner.Run(ctx, loop.Task{Prompt: workload.Prompt})
		if err != nil {
			return "", err
		}
		if s.Status != loop.StatusCompleted || s.ToolCallCount != workload.K || s.InteractionCount != workload.Iterations {
			return "", fmt.Errorf("session %s: status %s (%s %s), %d tool calls, %d model calls", s.ID, s.Status, s.Reason, s.Detail, s.ToolCallCount, s.InteractionCount)
		}
		mu.Lock()
		sessions++
		lastID = s.ID
		mu.Unlock()
		return s.Answer, nil
	}
	var events int
	settle := func() error { return runner.Sync(context.Background()) }
	closeFn := func() error {
		// Count the events of one session before closing the store, once
		// every end committing behind its return has landed.
		if err := settle(); err != nil {
			return err
		}
		if lastID != "" {
			ev, err := st.Load(context.Background(), lastID)
			if err != nil {
				return err
			}
			events = len(ev)
		}
		return st.Close()
	}
	stats := func() map[string]float64 {
		out := map[string]float64{"events_per_session": float64(events), "sessions_total": float64(sessions)}
		if store == "sqlite" && sessions > 0 {
			var size int64
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if fi, err := os.Stat(dbPath + suffix); err == nil {
					size += fi.Size()
				}
			}
			out["db_bytes"] = float64(size)
			out["db_bytes_per_1k_iterations"] = float64(size) / float64(sessions*workload.Iterations) * 1000
		}
		return out
	}
	return &harness.Runtime{Run: run, Settle: settle, Close: closeFn, Stats: stats}, nil
}

// pgLog is a PostgreSQL store in a database made for the run: Close drops
// the database, or stops the server when the run started it.
type pgLog struct {
	*postgres.Store
	drop func() error
}

func (l pgLog) Close() error { return errors.Join(l.Store.Close(), l.drop()) }

func openPostgres(ctx context.Context, url string) (log, error) {
	stop := func() {}
	if url == "" {
		u, s, err := pgtest.StartServer(true)
		if err != nil {
			return nil, fmt.Errorf("-store postgres: %w (or pass -pg URL)", err)
		}
		url, stop = u, s
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		stop()
		return nil, fmt.Errorf("-store postgres: %w", err)
	}
	name := fmt.Sprintf("agentloop_bench_%d", os.Getpid())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		stop()
		return nil, fmt.Errorf("-store postgres: %w", err)
	}
	drop := func() error {
		defer stop()
		defer admin.Close(context.Background())
		_, err := admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		return err
	}
	rest, query, _ := strings.Cut(url, "?")
	dbURL := rest[:strings.LastIndex(rest, "/")] + "/" + name
	if query != "" {
		dbURL += "?" + query
	}
	s, err := postgres.Open(ctx, dbURL)
	if err != nil {
		return nil, errors.Join(err, drop())
	}
	return pgLog{Store: s, drop: drop}, nil
}
