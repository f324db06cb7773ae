// Package telemetry lets operators see inside agentloop: OpenTelemetry
// traces following the GenAI semantic conventions (a span per session, per
// iteration, per model call and per tool call), exported over OTLP as the
// standard OTEL_* environment variables say, and metrics from one set of
// instruments, exported as Prometheus text (for /metrics) and over OTLP.
//
// Both are built from the event log, not from the loop: Observe watches a
// store's commit notices and turns committed events into spans and
// measurements on its own goroutine. With nothing configured, Observe does
// not even watch, so a process without telemetry pays nothing for it.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options say what a process wants beyond what the environment configures.
type Options struct {
	// Prometheus serves the metrics as Prometheus text (Handler): for
	// agentloop serve's /metrics.
	Prometheus bool
	// Version is the service.version resource attribute.
	Version string
	// OnError hears of export failures (a collector that cannot be
	// reached, a refused request); default: they are dropped. Telemetry
	// never fails or slows a session.
	OnError func(error)
}

// Telemetry is a process's tracer and meter providers.
type Telemetry struct {
	tracer   trace.Tracer // nil: tracing is off
	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider // nil: no metrics reader
	meter    metric.Meter
	inst     *instruments
	registry *prometheus.Registry
	calls    calls // model calls made, not yet traced (see Resolver)
}

// New sets telemetry up from the OTEL_* environment:
//
//   - traces go over OTLP when OTEL_TRACES_EXPORTER is "otlp", or is unset
//     and OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//     is set; OTEL_EXPORTER_OTLP_PROTOCOL (or …_TRACES_PROTOCOL) picks
//     http/protobuf (the default) or grpc; every other OTEL_EXPORTER_OTLP_*
//     setting (headers, timeout, compression, certificates) is the
//     exporter's own;
//   - metrics go over OTLP/HTTP likewise (OTEL_METRICS_EXPORTER, …_METRICS_ENDPOINT);
//   - OTEL_SDK_DISABLED=true turns both off; OTEL_SERVICE_NAME and
//     OTEL_RESOURCE_ATTRIBUTES name the process (service.name defaults
//     to "agentloop").
//
// Call Shutdown before the process exits: it sends what is still buffered.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	t := &Telemetry{meter: noop.NewMeterProvider().Meter(meterName)}
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return t, t.instrument()
	}
	traces, err := exporting("TRACES")
	if err != nil {
		return nil, err
	}
	metrics, err := exporting("METRICS")
	if err != nil {
		return nil, err
	}
	// The SDK reports export failures through its global handler (by
	// default, the standard logger): send them where the process wants.
	onError := o.OnError
	if onError == nil {
		onError = func(error) {}
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(onError))
	attrs := []attribute.KeyValue{attribute.String("service.name", "agentloop")}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}

	if traces {
		exp, err := spanExporter(ctx)
		if err != nil {
			return nil, err
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(ids{}))
		// Calls to providers and MCP servers carry the session's trace
		// context as a W3C traceparent (see Resolver).
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
		t.tracer = t.tp.Tracer(meterName)
	}

	readers := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if o.Prometheus {
		readers = append(readers, sdkmetric.WithReader(t.prometheusReader()))
	}
	if metrics {
		if p := protocol("METRICS"); p != "http/protobuf" {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL %q: metrics go over http/protobuf only; set OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/protobuf, or OTEL_METRICS_EXPORTER=none", p)
		}
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP metrics exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if o.Prometheus || metrics {
		t.mp = sdkmetric.NewMeterProvider(readers...)
		t.meter = t.mp.Meter(meterName)
	}
	return t, t.instrument()
}

// Metrics is telemetry with Prometheus metrics only, whatever the
// environment says: for a server embedded in a program with its own
// telemetry set-up, and for tests.
func Metrics() *Telemetry {
	t := &Telemetry{}
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(t.prometheusReader()),
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "agentloop"))))
	t.meter = t.mp.Meter(meterName)
	if err := t.instrument(); err != nil {
		panic(err) // only a duplicate instrument fails, and the meter is new
	}
	return t
}

// prometheusReader is the reader that serves the metrics as Prometheus
// text from a registry of their own (Handler).
func (t *Telemetry) prometheusReader() sdkmetric.Reader {
	t.registry = prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(t.registry), otelprom.WithoutScopeInfo())
	if err != nil {
		panic(err) // only a duplicate registration fails, and the registry is new
	}
	return exp
}

const meterName = "github.com/agentloop/agentloop"

// exporting says whether the environment asks for OTLP export of a
// signal (TRACES or METRICS).
func exporting(signal string) (bool, error) {
	name := "OTEL_" + signal + "_EXPORTER"
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv(name))); v {
	case "otlp":
		return true, nil
	case "none":
		return false, nil
	case "":
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("%s %q: agentloop exports over OTLP only; set %s=otlp (with OTEL_EXPORTER_OTLP_ENDPOINT), or none", name, v, name)
	}
}

func protocol(signal string) string {
	p := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if p == "" {
		p = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if p == "" {
		return "http/protobuf"
	}
	return p
}

func spanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch p := protocol("TRACES"); p {
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: agentloop sends traces over http/protobuf or grpc; set one of those", p)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	return exp, nil
}

// Tracing says whether spans are exported.
func (t *Telemetry) Tracing() bool { return t.tracer != nil }

// active says whether anything would read what Observe records.
func (t *Telemetry) active() bool { return t.tracer != nil || t.mp != nil }

// Meter is the meter the process's own instruments (HTTP requests, open
// streams) come from; a no-op meter when metrics go nowhere.
func (t *Telemetry) Meter() metric.Meter { return t.meter }

// Handler serves the metrics as Prometheus text; nil unless
// Options.Prometheus was set.
func (t *Telemetry) Handler() http.Handler {
	if t.registry == nil {
		return nil
	}
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Shutdown sends what is buffered and stops the exporters. Stop every
// Observe first, so the spans of their last events are among what is sent.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
