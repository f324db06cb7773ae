// Package otlptest is an in-process OTLP/HTTP receiver for tests: it
// accepts what an OpenTelemetry exporter sends to /v1/traces (protobuf,
// gzip or not) and keeps the spans, decoded, for the test to look at.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, its attributes as plain Go values.
type Span struct {
	Name             string
	TraceID, SpanID  string
	ParentID         string // "" for a root span
	Kind             int32
	Start, End       time.Time
	Attrs            map[string]any
	Resource         map[string]any
	Error            bool // status code ERROR
	StatusMessage    string
	InstrumentationS string
}

// Receiver collects spans. URL is what OTEL_EXPORTER_OTLP_ENDPOINT takes.
type Receiver struct {
	URL  string
	srv  *httptest.Server
	mu   sync.Mutex
	got  []Span
	errs []error
}

// Start starts a receiver; Close stops it.
func Start() *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	return r
}

func (r *Receiver) Close() { r.srv.Close() }

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.got...)
}

// Errors are the requests the receiver could not read.
func (r *Receiver) Errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" {
		w.WriteHeader(http.StatusOK) // metrics and logs are accepted and dropped
		return
	}
	spans, err := decode(req)
	r.mu.Lock()
	if err != nil {
		r.errs = append(r.errs, err)
	}
	r.got = append(r.got, spans...)
	r.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(b)
}

func decode(req *http.Request) ([]Span, error) {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return nil, fmt.Errorf("content type %q, want application/x-protobuf", ct)
	}
	body := io.Reader(req.Body)
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, err
		}
		body = z
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		return nil, err
	}
	var out []Span
	for _, rs := range msg.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				out = append(out, Span{
					Name: sp.Name, TraceID: hex.EncodeToString(sp.TraceId), SpanID: hex.EncodeToString(sp.SpanId),
					ParentID: hex.EncodeToString(sp.ParentSpanId), Kind: int32(sp.Kind),
					Start: time.Unix(0, int64(sp.StartTimeUnixNano)), End: time.Unix(0, int64(sp.EndTimeUnixNano)),
					Attrs: attrs(sp.Attributes), Resource: res,
					Error: sp.GetStatus().GetCode() == 2, StatusMessage: sp.GetStatus().GetMessage(),
					InstrumentationS: ss.GetScope().GetName(),
				})
			}
		}
	}
	return out, nil
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = value(kv.Value)
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var a []any
		for _, e := range x.ArrayValue.Values {
			a = append(a, value(e))
		}
		return a
	}
	return nil
}
