package mcp

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A tool call made with a span context sends it to an HTTP server as a
// W3C traceparent (the propagator agentloop's telemetry sets); a call
// made without one sends none.
func TestHTTPServerHearsTheCallsTraceContext(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	srv := testServer(false)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var mu sync.Mutex
	var heard []string // the traceparent of each tools/call request
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if strings.Contains(string(body), `"tools/call"`) {
				mu.Lock()
				heard = append(heard, r.Header.Get("Traceparent"))
				mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	s, err := Connect(t.Context(), ServerConfig{Name: "web", URL: ts.URL, HTTPClient: ts.Client(), Reconnects: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled})
	echo := byName(t, s.Tools(), "web__echo")
	if res, err := echo.Call(trace.ContextWithSpanContext(t.Context(), sc), []byte(`{"text":"traced"}`)); err != nil || res.Output != "traced" {
		t.Fatalf("echo: %+v %v", res, err)
	}
	if res, err := echo.Call(t.Context(), []byte(`{"text":"plain"}`)); err != nil || res.Output != "plain" {
		t.Fatalf("echo: %+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if len(heard) != 2 || heard[0] != want || heard[1] != "" {
		t.Fatalf("traceparents %q, want %q then none", heard, want)
	}
}
