package transport

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentloop/agentloop/model"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A call made with a span in its context (telemetry wraps each session's
// model so that it is) joins that span's trace: every request carries the
// span's context as the process's propagator writes it (a W3C traceparent
// under agentloop's telemetry), and the span is told the server called,
// the status of each reply, and, when the call fails, what failed
// (error.type). Without a recording span none of this is done.

// Attribute names of the OpenTelemetry semantic conventions.
const (
	attrServerAddress = "server.address"
	attrServerPort    = "server.port"
	attrStatusCode    = "http.response.status_code"
	attrErrorType     = "error.type"
)

// serverOf is the host and port of an endpoint URL (the scheme's port when
// it names none; 0 when it cannot be read).
func serverOf(raw string) (string, int) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", 0
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		switch u.Scheme {
		case "https":
			port = 443
		case "http":
			port = 80
		}
	}
	return u.Hostname(), port
}

// propagate writes ctx's span context into the request's header.
//
//go:noinline
func propagate(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// reportServer tells ctx's span which server the call goes to.
//
//go:noinline
func (c *Client) reportServer(ctx context.Context) {
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		host, port := serverOf(c.cfg.URL)
		sp.SetAttributes(attribute.String(attrServerAddress, host), attribute.Int(attrServerPort, port))
	}
}

// reportStatus tells ctx's span the status of a reply.
//
//go:noinline
func reportStatus(ctx context.Context, code int) {
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		sp.SetAttributes(attribute.Int(attrStatusCode, code))
	}
}

// reportFailure tells ctx's span what made the call fail.
//
//go:noinline
func reportFailure(ctx context.Context, err error) {
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		sp.SetAttributes(attribute.String(attrErrorType, ErrorType(err)))
	}
}

// ErrorType names what made a call fail, as error.type says it:
// rate_limited (HTTP 429), http_<status> (any other refusal), timeout,
// canceled, invalid_response (a reply that could not be read),
// connection_failed (the server could not be reached or dropped the
// connection), or _OTHER.
func ErrorType(err error) string {
	var se *StatusError
	var ne *NetError
	var oe *net.OpError
	switch {
	case errors.As(err, &se):
		if se.StatusCode == http.StatusTooManyRequests {
			return "rate_limited"
		}
		return "http_" + strconv.Itoa(se.StatusCode)
	case errors.Is(err, model.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, model.ErrMalformed):
		return "invalid_response"
	case errors.As(err, &ne), errors.As(err, &oe):
		return "connection_failed"
	}
	return "_OTHER"
}
