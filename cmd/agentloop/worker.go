package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/temporal"
)

// cmdWorker runs session workflows and their steps for a Temporal
// cluster until SIGTERM or Ctrl-C.
func cmdWorker(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hostPort := fs.String("temporal", os.Getenv("AGENTLOOP_TEMPORAL"), "the Temporal frontend, HOST:PORT ($AGENTLOOP_TEMPORAL)")
	namespace := fs.String("namespace", "default", "the Temporal namespace")
	queue := fs.String("task-queue", temporal.DefaultTaskQueue, "the task queue sessions are started on")
	db := dbFlag(fs)
	heartbeat := fs.Duration("heartbeat", 5*time.Second, "how often a step run as a regular activity tells Temporal it is alive (keep it well under the workflows' heartbeat timeout)")
	var sb sandboxFlags
	sb.register(fs, "none") // as agentloop serve: every worker applies the same rules
	maxSteps := fs.Int("max-concurrent-steps", 0, "most steps this worker runs at once (0: the SDK's default)")
	checkpointsDir := checkpointsFlag(fs)
	logFlags := registerLogFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop worker --temporal HOST:PORT [flags]\n\nRuns agentloop sessions as Temporal workflows: each model call, the tool calls and the")
		fmt.Fprintln(stderr, "bookkeeping between are activities (most run locally, beside the workflow); events live")
		fmt.Fprintln(stderr, "in the session database (--db), which every worker and server of the deployment must")
		fmt.Fprintln(stderr, "share (PostgreSQL across machines).\n\nFlags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *hostPort == "" {
		fmt.Fprintln(stderr, "agentloop worker: --temporal HOST:PORT is required (e.g. 127.0.0.1:7233 for `temporal server start-dev`)")
		return exitUsage
	}
	sandboxing, err := sb.sandboxing(portOf(*db))
	if err != nil {
		fmt.Fprintf(stderr, "agentloop worker: %v\n", err)
		return exitUsage
	}
	logs, err := logFlags.open(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "agentloop worker: %v\n", err)
		return exitUsage
	}
	// Under --log-format json, from here on every line is JSON (see serve).
	log, stderr, info := logs.Logger, logs.errs, logs.info
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer st.Close()
	tel, doneObserving, err := observe(st, false, stderr)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	logs.tel.Store(tel)
	defer doneObserving()
	prices, err := assemble.Prices("")
	if err != nil {
		return fail(stderr, "%v", err)
	}
	resolver := &assemble.Resolver{Sandbox: sandboxing, Log: log}
	// Private sandbox directories this machine keeps of sessions whose
	// later steps ran on other workers (see assemble.SweepPrivateDirs).
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	defer stopSweep()
	go resolver.KeepPrivateDirsSwept(sweepCtx, st, privateSweepEvery)
	rc := resolver.RunnerConfig(st, prices)
	rc.Resolve = tel.Resolver(rc.Resolve) // model calls join the session's trace
	cps, err := openCheckpoints(*checkpointsDir, *db, info)
	if err != nil {
		fmt.Fprintf(stderr, "agentloop worker: %v\n", err)
		return exitUsage
	}
	if cps != nil {
		// Kept on this machine, or in the shared directory --checkpoints names.
		rc.Checkpoint = checkpointHook(cps, nil)
	}
	runner, err := loop.New(rc)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	c, err := client.Dial(client.Options{HostPort: *hostPort, Namespace: *namespace, Logger: tlog.NewStructuredLogger(log)})
	if err != nil {
		return fail(stderr, "connecting to Temporal at %s: %v (is it running? `temporal server start-dev` starts one)", *hostPort, err)
	}
	defer c.Close()
	w := temporal.NewWorker(c, *queue, &temporal.Activities{Runner: runner, HeartbeatEvery: *heartbeat},
		worker.Options{MaxConcurrentActivityExecutionSize: *maxSteps, MaxConcurrentLocalActivityExecutionSize: *maxSteps})
	if err := w.Start(); err != nil {
		return fail(stderr, "starting the worker: %v", err)
	}
	fmt.Fprintf(info, "agentloop worker: running sessions from task queue %s on %s (namespace %s, database %s)\n", *queue, *hostPort, *namespace, assemble.DescribeDB(*db))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	fmt.Fprintln(info, "agentloop worker: stopping (steps under way finish first)")
	w.Stop()
	return 0
}
