// Command agentloop is the agentloop contender of the comparison: the
// OpenAI-compatible provider (model/provider, non-streaming: no OnDelta),
// the add tool in a tool.Registry (built for each session with -via
// service, as a served session's tools are), and either a durable store
// (SQLite, or PostgreSQL: every event written) or the in-memory store. Sessions run on a bare loop.Runner (-via runner), or are
// started through package service (-via service) as `agentloop run` and
// `agentloop serve` start them: a lease per session and every append
// fenced by its token.
//
//	agentloop -store sqlite|postgres|memory [-via runner|service] [-tool idempotent|plain] [-pg URL] -server URL -mode seq|conc …
//
// -tool plain registers add as the plain tool.Func a user writes first:
// not declared idempotent, so before each call the runner waits for the
// reply that asked for it (model.responded, tool.started) to be durable.
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
	"sync"
	"sync/atomic"

	"github.com/agentloop/agentloop/bench/compare/harness"
	"github.com/agentloop/agentloop/bench/compare/rundb"
	"github.com/agentloop/agentloop/bench/compare/workload"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/store/postgres"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/tool"
)

func main() {
	var o options
	flag.StringVar(&o.store, "store", "sqlite", "sqlite or postgres (durable, every event written) or memory")
	flag.StringVar(&o.via, "via", "runner", "runner: sessions run on a bare loop.Runner; service: started through package service (a lease per session, every append fenced), the path `agentloop run` and `agentloop serve` take")
	flag.StringVar(&o.pg, "pg", os.Getenv("AGENTLOOP_BENCH_POSTGRES"), "-store postgres: a server's URL (postgres://…; a database is made for the run and dropped); empty: start a server of its own")
	flag.StringVar(&o.tool, "tool", "idempotent", "idempotent: add declared idempotent (a call may run before the reply that asked for it is durable); plain: a plain tool.Func, whose every call waits for that commit")
	flag.BoolVar(&o.endBehind, "end-behind", false, "loop.Config.EndBehind (-via runner): Run returns before a session's last commit lands; the harness waits for the commits (Runner.Sync) inside the measured time")
	harness.Main(func() harness.Contender {
		stores := map[string]string{
			"sqlite":   "store/sqlite: every event durable",
			"postgres": "store/postgres (fsync on): every event durable",
			"memory":   "store/memory",
		}
		name, note := "agentloop-"+o.store, "loop.Runner + model/provider openai (non-streaming) + "+stores[o.store]
		switch {
		case o.via == "service" && o.endBehind:
			fmt.Fprintln(os.Stderr, "agentloop: -end-behind needs -via runner: the service makes every end durable before it lets the session's lease go")
			os.Exit(2)
		case o.via == "service":
			name = "agentloop-service-" + o.store
			note = "service.New + Start (a lease per session, every append fenced by its token) over loop.Runner + model/provider openai (non-streaming) + " + stores[o.store]
		case o.via != "runner":
			fmt.Fprintf(os.Stderr, "agentloop: -via %q: want runner or service\n", o.via)
			os.Exit(2)
		}
		switch o.tool {
		case "idempotent":
		case "plain":
			name += "-plain"
			note += "; add is a plain tool.Func (not declared idempotent): each call waits for a commit of the reply that asked for it"
		default:
			fmt.Fprintf(os.Stderr, "agentloop: -tool %q: want idempotent or plain\n", o.tool)
			os.Exit(2)
		}
		if o.endBehind {
			name += "-endbehind"
			note += "; Run returns before the session's last commit lands (loop.Config.EndBehind), every commit awaited inside the measured time (Runner.Sync)"
		}
		return harness.Contender{Name: name, Notes: note,
			New: func(ctx context.Context, env harness.Env) (*harness.Runtime, error) {
				return newRuntime(ctx, env, o)
			}}
	})
}

// options are the contender's flags.
type options struct {
	store, via, pg string
	// tool is "idempotent" (add declared so) or "plain".
	tool      string
	endBehind bool
}

// pure marks a tool that computes its result from its arguments alone:
// running it twice is harmless, so the runner need not make the reply
// that asked for it durable first (tool.Idempotent).
type pure struct{ tool.Tool }

func (pure) Idempotent() bool { return true }

// addTool is add over workload.Add: a pure function, declared so unless
// plain.
func addTool(plain bool) tool.Tool { return addToolIn(nil, plain) }

// addToolIn is addTool counting its calls in the harness's session of
// ctx rather than in the context the tool is called with (when ctx is
// not nil), declared idempotent unless plain.
func addToolIn(counted context.Context, plain bool) tool.Tool {
	t := tool.Func(model.ToolSpec{Name: workload.ToolName, Description: workload.ToolDescription, Parameters: json.RawMessage(workload.ToolSchema)},
		func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			if counted != nil {
				ctx = counted
			}
			sum, err := workload.AddJSON(ctx, args)
			if err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Output: strconv.Itoa(sum)}, nil
		})
	if plain {
		return t
	}
	return pure{t}
}

func newRuntime(ctx context.Context, env harness.Env, o options) (*harness.Runtime, error) {
	var st store.Store
	dbPath := filepath.Join(env.Dir, "agentloop.db")
	switch o.store {
	case "sqlite":
		s, err := sqlite.Open(dbPath)
		if err != nil {
			return nil, err
		}
		st = s
	case "postgres":
		s, err := openPostgres(ctx, o.pg)
		if err != nil {
			return nil, err
		}
		st = s
	case "memory":
		st = memory.New()
	default:
		return nil, fmt.Errorf("-store %q: want sqlite, postgres or memory", o.store)
	}
	m, err := provider.Open("openai/"+workload.ModelName, provider.Options{BaseURL: env.BaseURL, APIKey: workload.APIKey, HTTPClient: env.HTTPClient})
	if err != nil {
		return nil, err
	}
	cfg := loop.Config{
		Model: m, ModelName: workload.ModelName, Tools: tool.MustRegistry(addTool(o.tool == "plain")), Log: st,
		SystemPrompt: workload.SystemPrompt, Limits: loop.Limits{MaxIterations: workload.Iterations + 4},
		EndBehind: o.endBehind,
	}
	// runSession runs one session to its end.
	var runSession func(ctx context.Context) (*loop.State, error)
	settle := func() error { return nil }
	stop := func() error { return nil }
	if o.via == "service" {
		// A service runs its sessions under its own context, not the
		// caller's, so the harness's tool-call counter reaches the add
		// tool through the session's Env, resolved per session as
		// `agentloop serve` resolves each session's tools.
		var (
			counters sync.Map // run key → the context Start was called with
			runs     atomic.Int64
		)
		cfg.Model, cfg.Tools = nil, nil
		cfg.Resolve = func(_ context.Context, d *loop.SessionStarted, st *loop.State) (*loop.Env, error) {
			ctx, ok := counters.Load(d.Labels[runLabel])
			if !ok {
				return nil, fmt.Errorf("session %s: not started by this harness", st.ID)
			}
			reg, err := tool.NewRegistry(addToolIn(ctx.(context.Context), o.tool == "plain"))
			if err != nil {
				return nil, err
			}
			return &loop.Env{Model: m, Tools: reg, SystemPrompt: workload.SystemPrompt}, nil
		}
		svc, err := service.New(service.Config{Store: st, Runner: cfg})
		if err != nil {
			return nil, err
		}
		caller := service.Local("bench")
		runSession = func(ctx context.Context) (*loop.State, error) {
			// The service makes the session's ID, as it does for every
			// session started over HTTP or by `agentloop run`; the run's
			// own key reaches Resolve as a label.
			key := strconv.FormatInt(runs.Add(1), 10)
			counters.Store(key, ctx)
			defer counters.Delete(key)
			started, err := svc.Start(ctx, caller, loop.Task{Prompt: workload.Prompt, Labels: map[string]string{runLabel: key}})
			if err != nil {
				return nil, err
			}
			return started.Session.Wait(ctx)
		}
		stop = svc.Close
	} else {
		runner, err := loop.New(cfg)
		if err != nil {
			return nil, err
		}
		runSession = func(ctx context.Context) (*loop.State, error) {
			return runner.Run(ctx, loop.Task{Prompt: workload.Prompt})
		}
		settle = func() error { return runner.Sync(context.Background()) }
	}
	var mu sync.Mutex
	var sessions int
	var lastID string
	run := func(ctx context.Context) (string, error) {
		s, err := runSession(ctx)
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
		return errors.Join(stop(), st.Close())
	}
	stats := func() map[string]float64 {
		out := map[string]float64{"events_per_session": float64(events), "sessions_total": float64(sessions)}
		if o.store == "sqlite" && sessions > 0 {
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

func openPostgres(ctx context.Context, url string) (store.Store, error) {
	dbURL, drop, err := rundb.Postgres(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("-store postgres: %w", err)
	}
	s, err := postgres.Open(ctx, dbURL)
	if err != nil {
		return nil, errors.Join(err, drop())
	}
	return pgLog{Store: s, drop: drop}, nil
}

// runLabel is the label that ties a session the service started to the
// harness's run, whose tool-call counter its add tool counts in.
const runLabel = "bench-run"
