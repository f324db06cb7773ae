package main

import (
	"context"
	"fmt"
	"io"
	"sync"
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
