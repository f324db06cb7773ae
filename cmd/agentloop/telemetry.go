package main

import (
	"context"
	"fmt"
	"io"
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
	tel, err = telemetry.New(context.Background(), telemetry.Options{Prometheus: prom, Version: version})
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: %w (unset the OTEL_* variables to run without it)", err)
	}
	stop := tel.Observe(st)
	return tel, func() {
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			fmt.Fprintf(stderr, "telemetry: sending the last spans: %v\n", err)
		}
	}, nil
}
