package mcp

import (
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext sends the trace context of the call a request is made for
// (the span context in its context) as the process's propagator writes it
// (a W3C traceparent under agentloop's telemetry), so a server that traces
// joins the session's trace. A request made without one goes as it is.
type traceContext struct {
	base http.RoundTripper
}

func (t traceContext) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	otel.GetTextMapPropagator().Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	return t.base.RoundTrip(req)
}

// withTraceContext is client with its transport wrapped in traceContext.
func withTraceContext(client *http.Client) *http.Client {
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client.Transport = traceContext{base: base}
	return client
}
