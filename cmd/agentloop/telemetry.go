package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/telemetry"
)

// observe sets up telemetry from the OTEL_* environment and starts
// observing st: traces (and OTLP metrics) when the environment asks for
// them, Prometheus metrics for serve. done stops observing, then sends
// what is buffered: call it after the sessions have stopped, so their last
// events are traced.
func observe(st store.Store, prom bool, stderr io.Writer) (tel *telemetry.Telemetry, done func(), err error) {
	// The first export failure is shown with what to do; the rest are counted.
	var mu sync.Mutex
	failures := 0
	onError := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failures++; failures == 1 {
			fmt.Fprintf(stderr, "telemetry: %v\n  (is the collector at OTEL_EXPORTER_OTLP_ENDPOINT running? unset the OTEL_* variables to run without telemetry)\n", err)
		}
	}
	tel, err = telemetry.New(context.Background(), telemetry.Options{Prometheus: prom, Version: version, OnError: onError})
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: %w (unset the OTEL_* variables to run without it)", err)
	}
	stop := tel.Observe(st)
	return tel, func() {
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			onError(err)
		}
		mu.Lock()
		if failures > 1 {
			fmt.Fprintf(stderr, "telemetry: %d more export failures\n", failures-1)
		}
		mu.Unlock()
	}, nil
}

// logFlags are --log-format and --log-level, for the commands that log
// (serve, worker).
type logFlags struct {
	format, level *string
}

func registerLogFlags(fs *flag.FlagSet) *logFlags {
	level := os.Getenv("AGENTLOOP_LOG_LEVEL")
	if level == "" {
		level = "info"
	}
	return &logFlags{
		format: fs.String("log-format", "text", "text or json (json: every line this command writes to stderr is a JSON object)"),
		level:  fs.String("log-level", level, "debug, info, warn or error: the least severe log lines written ($AGENTLOOP_LOG_LEVEL)"),
	}
}

// logs is a command's logger and where its other output goes.
type logs struct {
	*slog.Logger
	// errs takes the command's messages of failure, info its other
	// messages: stderr itself under --log-format text; under json, each
	// write becomes one log line (level ERROR or INFO), so nothing plain
	// reaches stderr.
	errs, info io.Writer
	// tel, once set, lets log lines about a session carry its trace id.
	tel atomic.Pointer[telemetry.Telemetry]
}

// open makes the command's logger, or says what is wrong with the flags.
func (f *logFlags) open(stderr io.Writer) (*logs, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: give debug, info, warn or error", *f.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	l := &logs{errs: stderr, info: stderr}
	var h slog.Handler
	switch *f.format {
	case "text":
		h = slog.NewTextHandler(stderr, opts)
	case "json":
		h = slog.NewJSONHandler(stderr, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: give text or json", *f.format)
	}
	l.Logger = slog.New(telemetry.LogHandler(h, func() bool {
		t := l.tel.Load()
		return t != nil && t.Tracing()
	}))
	if *f.format == "json" {
		l.errs = logWriter{l.Handler(), slog.LevelError}
		l.info = logWriter{l.Handler(), slog.LevelInfo}
		// What libraries write with the standard log package (net/http's
		// server errors) and slog's default logger becomes JSON lines too.
		slog.SetDefault(l.Logger)
	}
	return l, nil
}

// logWriter makes each write one log line: the text, without its last
// line break, is the message. The lines are the command's own messages
// (where it listens, why it stops): they are written whatever
// --log-level says.
type logWriter struct {
	h     slog.Handler
	level slog.Level
}

func (w logWriter) Write(p []byte) (int, error) {
	if msg := strings.TrimRight(string(p), "\n"); msg != "" {
		_ = w.h.Handle(context.Background(), slog.NewRecord(time.Now(), w.level, msg, 0))
	}
	return len(p), nil
}
