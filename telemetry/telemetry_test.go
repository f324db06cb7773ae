package telemetry_test

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/telemetry"
	"github.com/agentloop/agentloop/telemetry/otlptest"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/workspace"
)

// runSession runs a three-step session (a write, a failing read, the
// answer) on a SQLite store that tel observes, and returns its id.
func runSession(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stop := tel.Observe(st)
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	call := func(id, name, args string, in, out int) scripted.Step {
		s := scripted.Call(name, args)
		s.ToolCalls[0].ID, s.Usage = id, &model.Usage{InputTokens: in, OutputTokens: out}
		return s
	}
	answer := scripted.Text("Done.")
	answer.Usage = &model.Usage{InputTokens: 200, OutputTokens: 5}
	m := scripted.Replies(call("c1", "write_file", `{"path":"a.txt","content":"secret-content"}`, 100, 20),
		call("c2", "read_file", `{"path":"missing.txt"}`, 150, 10), answer)
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(fs.Tools(ws)...), Log: st})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(context.Background(), loop.Task{Prompt: "write a.txt", Model: "openai/gpt-4.1-mini"})
	if err != nil || s.Status != loop.StatusCompleted {
		t.Fatalf("%v %v %s", err, s.Status, s.Reason)
	}
	stop()
	return s.ID
}

func TestSpansFollowTheGenAIConventions(t *testing.T) {
	recv := otlptest.Start()
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "agentloop-test")
	tel, err := telemetry.New(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.Tracing() {
		t.Fatal("an OTLP endpoint in the environment did not turn tracing on")
	}
	id := runSession(t, tel)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if errs := recv.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	spans := recv.Spans()
	byName := map[string][]otlptest.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	root := one(t, byName, "invoke_agent agentloop")
	if root.ParentID != "" || root.Attrs["gen_ai.operation.name"] != "invoke_agent" || root.Attrs["gen_ai.conversation.id"] != id ||
		root.Attrs["gen_ai.request.model"] != "gpt-4.1-mini" || root.Attrs["gen_ai.provider.name"] != "openai" ||
		root.Attrs["agentloop.status"] != "completed" || root.Resource["service.name"] != "agentloop-test" {
		t.Fatalf("session span: %+v", root)
	}
	iters := byName["iteration"]
	if len(iters) != 3 {
		t.Fatalf("%d iteration spans, want 3: %v", len(iters), names(spans))
	}
	iterIDs := map[string]bool{}
	for _, it := range iters {
		if it.ParentID != root.SpanID || it.TraceID != root.TraceID {
			t.Fatalf("iteration not under the session: %+v", it)
		}
		iterIDs[it.SpanID] = true
	}
	chats := byName["chat gpt-4.1-mini"]
	if len(chats) != 3 {
		t.Fatalf("%d chat spans, want 3: %v", len(chats), names(spans))
	}
	for _, c := range chats {
		if !iterIDs[c.ParentID] || c.Kind != 3 /* client */ || c.Attrs["gen_ai.operation.name"] != "chat" || c.Attrs["gen_ai.request.model"] != "gpt-4.1-mini" {
			t.Fatalf("chat span: %+v", c)
		}
		if c.Attrs["gen_ai.usage.input_tokens"] == nil || c.Attrs["gen_ai.usage.output_tokens"] == nil || c.Attrs["gen_ai.response.finish_reasons"] == nil {
			t.Fatalf("chat span without usage or finish reasons: %+v", c.Attrs)
		}
		if c.End.Before(c.Start) || c.Start.Before(root.Start) || c.End.After(root.End) {
			t.Fatalf("chat span outside its session: %v–%v vs %v–%v", c.Start, c.End, root.Start, root.End)
		}
	}
	if in := chats[0].Attrs["gen_ai.usage.input_tokens"]; in != int64(100) {
		t.Fatalf("first chat input tokens %v", in)
	}
	write := one(t, byName, "execute_tool write_file")
	read := one(t, byName, "execute_tool read_file")
	if write.Attrs["gen_ai.operation.name"] != "execute_tool" || write.Attrs["gen_ai.tool.name"] != "write_file" || write.Attrs["gen_ai.tool.call.id"] != "c1" || write.Error || !iterIDs[write.ParentID] {
		t.Fatalf("write_file span: %+v", write)
	}
	if !read.Error || read.Attrs["error.type"] == nil {
		t.Fatalf("a failed read is not an error span: %+v", read)
	}
	for _, s := range spans { // metadata only: never the content of a call
		for k, v := range s.Attrs {
			if str, ok := v.(string); ok && strings.Contains(str, "secret-content") {
				t.Fatalf("span %s attribute %s carries tool arguments: %q", s.Name, k, str)
			}
		}
	}
}

func TestOffMeansNotWatching(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		t.Setenv(k, "")
	}
	tel, err := telemetry.New(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tel.Tracing() || tel.Handler() != nil {
		t.Fatal("telemetry on with nothing configured")
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	watching := false
	w := &watchCounter{Store: st, on: func() { watching = true }}
	tel.Observe(w)()
	if watching {
		t.Fatal("Observe watched the store with telemetry off")
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if tel, _ := telemetry.New(context.Background(), telemetry.Options{}); tel.Tracing() {
		t.Fatal("OTEL_SDK_DISABLED=true left tracing on")
	}
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := telemetry.New(context.Background(), telemetry.Options{}); err == nil || !strings.Contains(err.Error(), "http/protobuf or grpc") {
		t.Fatalf("an unsupported protocol: %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	if _, err := telemetry.New(context.Background(), telemetry.Options{}); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER=otlp") {
		t.Fatalf("an exporter agentloop does not have: %v", err)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc")
	if _, err := telemetry.New(context.Background(), telemetry.Options{}); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/protobuf") {
		t.Fatalf("metrics over grpc: %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	if tel, err := telemetry.New(context.Background(), telemetry.Options{}); err != nil || tel.Tracing() {
		t.Fatalf("OTEL_TRACES_EXPORTER=none with an endpoint set: %v, tracing %v", err, tel != nil && tel.Tracing())
	}
}

type watchCounter struct {
	*sqlite.Store
	on func()
}

func (w *watchCounter) Watch(fn func(n store.Notice)) func() { w.on(); return w.Store.Watch(fn) }

func TestPrometheusFromTheSameInstruments(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	runSession(t, tel)
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`agentloop_iterations_total 3`,
		`agentloop_model_calls_total{agentloop_outcome="ok",gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4.1-mini"} 3`,
		`gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4.1-mini",gen_ai_token_type="input"} 450`,
		`gen_ai_client_operation_duration_seconds_count{gen_ai_operation_name="chat"`,
		`agentloop_tool_calls_total{agentloop_outcome="ok",gen_ai_tool_name="write_file"} 1`,
		`agentloop_sessions_stopped_total{agentloop_reason="completed",agentloop_status="completed"} 1`,
		`agentloop_event_commit_lag_seconds_bucket`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Log(string(out))
	}
}

func names(spans []otlptest.Span) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return n
}

func one(t *testing.T, by map[string][]otlptest.Span, name string) otlptest.Span {
	t.Helper()
	if len(by[name]) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(by[name]), name)
	}
	return by[name][0]
}
