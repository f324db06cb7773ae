package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/telemetry/otlptest"
	"github.com/agentloop/agentloop/tool"
	"go.opentelemetry.io/otel/trace"
)

// remoteEcho is a tool served over the network (it names its server, as
// an MCP tool does); it keeps the span context each call came with.
type remoteEcho struct {
	mu    sync.Mutex
	heard []trace.SpanContext
}

func (r *remoteEcho) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "remote_echo", Description: "echo", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (r *remoteEcho) ServerName() string { return "remote" }
func (r *remoteEcho) Idempotent() bool   { return true }
func (r *remoteEcho) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	r.mu.Lock()
	r.heard = append(r.heard, trace.SpanContextFromContext(ctx))
	r.mu.Unlock()
	return tool.Result{Output: "echo"}, nil
}

// Every span of a session is in the trace SessionTraceID names; the calls
// of a remote tool run with a span context of that trace, whose span is
// the tool call's span exported; the model's calls likewise (the span
// each call was given is the chat span exported). An idempotent tool
// stays idempotent once wrapped.
func TestResolverPutsCallsInTheSessionsTrace(t *testing.T) {
	recv := otlptest.Start()
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	tel, err := telemetry.New(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stop := tel.Observe(st)
	echo := &remoteEcho{}
	var modelHeard []trace.SpanContext
	script := scripted.Replies(scripted.Call("remote_echo", `{}`), scripted.Text("Done."))
	m := model.Func(func(ctx context.Context, req *model.Request, s model.StreamFunc) (*model.Response, error) {
		modelHeard = append(modelHeard, trace.SpanContextFromContext(ctx))
		return script.Generate(ctx, req, s)
	})
	idempotent := false
	resolve := tel.Resolver(func(ctx context.Context, spec *loop.SessionStarted, s *loop.State) (*loop.Env, error) {
		return &loop.Env{Model: m, Tools: tool.MustRegistry(echo)}, nil
	})
	r, err := loop.New(loop.Config{Log: st, Resolve: func(ctx context.Context, spec *loop.SessionStarted, s *loop.State) (*loop.Env, error) {
		env, err := resolve(ctx, spec, s)
		if err == nil {
			wrapped, _ := env.Tools.Lookup("remote_echo")
			idempotent = tool.IsIdempotent(wrapped) && wrapped != tool.Tool(echo)
		}
		return env, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(context.Background(), loop.Task{Prompt: "echo", Model: "openai/gpt-x"})
	if err != nil || s.Status != loop.StatusCompleted {
		t.Fatalf("%v %v %s", err, s.Status, s.Reason)
	}
	stop()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !idempotent {
		t.Error("the remote tool was not wrapped, or lost its idempotence")
	}
	want := telemetry.SessionTraceID(s.ID).String()
	bySpan := map[string]otlptest.Span{}
	for _, sp := range recv.Spans() {
		if sp.TraceID != want {
			t.Fatalf("span %s in trace %s, want the session's %s", sp.Name, sp.TraceID, want)
		}
		bySpan[sp.SpanID] = sp
	}
	if len(echo.heard) != 1 || len(modelHeard) != 2 {
		t.Fatalf("%d tool calls, %d model calls", len(echo.heard), len(modelHeard))
	}
	if sp := bySpan[echo.heard[0].SpanID().String()]; echo.heard[0].TraceID().String() != want || sp.Name != "execute_tool remote_echo" {
		t.Fatalf("the tool call came with %v; that span is %+v", echo.heard[0], sp)
	}
	for i, sc := range modelHeard {
		if sp := bySpan[sc.SpanID().String()]; sc.TraceID().String() != want || sp.Name != "chat gpt-x" {
			t.Fatalf("model call %d came with %v; that span is %+v", i+1, sc, sp)
		}
	}
}

// A log line about a session carries session_id (named, or read from a
// request path) and its trace id while tracing; a line logged with a span
// in its context carries that span's ids.
func TestLogHandlerNamesSessionAndTrace(t *testing.T) {
	var buf bytes.Buffer
	tracing := true
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil), func() bool { return tracing }))
	log.Info("resumed session", "session_id", "s1")
	log.Info("request", "method", "GET", "path", "/v1/sessions/s2/events")
	log.Info("request", "method", "GET", "path", "/v1/sessions")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}})
	log.InfoContext(trace.ContextWithSpanContext(context.Background(), sc), "in a span", "session_id", "s3")
	log.With("session_id", "s4").Info("bound")
	tracing = false
	log.Info("untraced", "session_id", "s5")
	want := []map[string]any{
		{"session_id": "s1", "trace_id": telemetry.SessionTraceID("s1").String()},
		{"session_id": "s2", "trace_id": telemetry.SessionTraceID("s2").String()},
		{},
		{"session_id": "s3", "trace_id": sc.TraceID().String(), "span_id": sc.SpanID().String()},
		{"session_id": "s4", "trace_id": telemetry.SessionTraceID("s4").String()},
		{"session_id": "s5"},
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines\n%s", len(lines), buf.String())
	}
	for i, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"session_id", "trace_id", "span_id"} {
			if got[k] != want[i][k] {
				t.Errorf("line %d: %s = %v, want %v (%s)", i+1, k, got[k], want[i][k], line)
			}
		}
	}
}
