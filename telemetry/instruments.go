package telemetry

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// instruments are the measurements taken from committed events. Their
// names follow the GenAI semantic conventions where those define one
// (gen_ai.client.*); the rest are agentloop's.
type instruments struct {
	events      metric.Int64Counter
	iterations  metric.Int64Counter
	modelCalls  metric.Int64Counter
	toolCalls   metric.Int64Counter
	ended       metric.Int64Counter
	cost        metric.Float64Counter
	opDuration  metric.Float64Histogram // gen_ai.client.operation.duration
	tokenUsage  metric.Int64Histogram   // gen_ai.client.token.usage
	toolSeconds metric.Float64Histogram
	commitLag   metric.Float64Histogram
}

// Bucket boundaries the GenAI conventions advise for durations (seconds)
// and token counts.
var (
	secondsBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets   = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	lagBuckets     = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
)

func (t *Telemetry) instrument() error {
	m := t.meter
	in := &instruments{}
	var errs [10]error
	in.events, errs[0] = m.Int64Counter("agentloop.events", metric.WithDescription("Events committed by this process."))
	in.iterations, errs[1] = m.Int64Counter("agentloop.iterations", metric.WithDescription("Iterations started by this process."))
	in.modelCalls, errs[2] = m.Int64Counter("agentloop.model_calls", metric.WithDescription("Model calls this process made, by model and outcome."))
	in.toolCalls, errs[3] = m.Int64Counter("agentloop.tool_calls", metric.WithDescription("Tool calls this process finished, by tool and outcome."))
	in.ended, errs[4] = m.Int64Counter("agentloop.sessions_stopped", metric.WithDescription("Sessions that ended, paused or began waiting in this process, by status and reason."))
	in.cost, errs[5] = m.Float64Counter("agentloop.cost_usd", metric.WithDescription("Cost of this process's model calls, in US dollars."))
	in.opDuration, errs[6] = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of model calls."), metric.WithExplicitBucketBoundaries(secondsBuckets...))
	in.tokenUsage, errs[7] = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of model calls, by gen_ai.token.type (input, output)."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	in.toolSeconds, errs[8] = m.Float64Histogram("agentloop.tool.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of tool calls."), metric.WithExplicitBucketBoundaries(secondsBuckets...))
	in.commitLag, errs[9] = m.Float64Histogram("agentloop.event.commit_lag", metric.WithUnit("s"),
		metric.WithDescription("Time from an event being recorded to its commit notice."), metric.WithExplicitBucketBoundaries(lagBuckets...))
	t.inst = in
	return errors.Join(errs[:]...)
}
