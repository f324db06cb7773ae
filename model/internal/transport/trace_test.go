package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/model"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A call made inside a span sends the span's context on every attempt and
// reports on the span: the server, each reply's status, and what made the
// call fail.
func TestCallReportsToItsSpan(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	var mu sync.Mutex
	var heard []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		heard = append(heard, r.Header.Get("Traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"slow down"}}`)
	}))
	defer srv.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, span := tp.Tracer("test").Start(t.Context(), "chat")
	c := New(Config{Provider: "openai", URL: srv.URL + "/v1/chat/completions",
		Retry: Retry{MaxAttempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }}})
	_, err := c.Do(ctx, "m", body(t), nil, func(*Reply) (*model.Response, error) { return &model.Response{}, nil })
	span.End()
	if err == nil {
		t.Fatal("a 429 was taken for a reply")
	}
	want := fmt.Sprintf("00-%s-%s-01", span.SpanContext().TraceID(), span.SpanContext().SpanID())
	if len(heard) != 2 || heard[0] != want || heard[1] != want {
		t.Fatalf("traceparents %q, want %q on both attempts", heard, want)
	}
	got := map[attribute.Key]attribute.Value{}
	for _, a := range exp.GetSpans()[0].Attributes {
		got[a.Key] = a.Value
	}
	host, port := serverOf(srv.URL)
	if got["server.address"].AsString() != host || got["server.port"].AsInt64() != int64(port) ||
		got["http.response.status_code"].AsInt64() != 429 || got["error.type"].AsString() != "rate_limited" {
		t.Fatalf("span attributes %v", got)
	}
}

// Without a span in the context nothing is added to the request.
func TestCallWithoutSpanSendsNoTraceContext(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	var heard http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heard = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	c := New(Config{Provider: "openai", URL: srv.URL})
	if _, err := c.Do(t.Context(), "m", body(t), nil, func(*Reply) (*model.Response, error) { return &model.Response{}, nil }); err != nil {
		t.Fatal(err)
	}
	if heard.Get("Traceparent") != "" {
		t.Fatalf("traceparent %q sent without a span", heard.Get("Traceparent"))
	}
}

func TestErrorType(t *testing.T) {
	call := Call{Provider: "p", URL: "u", Model: "m"}
	tests := map[string]error{
		"rate_limited":      &model.RetryableError{Err: fmt.Errorf("%w (gave up after 4 attempts)", &StatusError{Call: call, StatusCode: 429})},
		"http_500":          &StatusError{Call: call, StatusCode: 500},
		"http_401":          &StatusError{Call: call, StatusCode: 401},
		"timeout":           &TimeoutError{Call: call, Limit: "first byte", After: time.Second},
		"canceled":          fmt.Errorf("p: call to u stopped: %w", context.Canceled),
		"invalid_response":  &MalformedError{Call: call, Detail: "garbage"},
		"connection_failed": &NetError{Call: call, Op: "cannot reach", Err: errors.New("connection refused")},
		"_OTHER":            errors.New("something else"),
	}
	for want, err := range tests {
		if got := ErrorType(err); got != want {
			t.Errorf("ErrorType(%v) = %s, want %s", err, got, want)
		}
	}
	if !strings.HasPrefix(ErrorType(&StatusError{StatusCode: 503}), "http_") {
		t.Error("a 503 is not named by its status")
	}
}

func body(t *testing.T) *Body {
	b, err := JSONBody(func() any { return map[string]any{"model": "m"} })
	if err != nil {
		t.Fatal(err)
	}
	return b
}
