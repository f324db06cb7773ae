package main

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/telemetry/otlptest"
)

// agentloop run with OTEL_EXPORTER_OTLP_ENDPOINT set sends the session's
// spans to that endpoint before it exits.
func TestRunSendsSpansOverOTLP(t *testing.T) {
	recv := otlptest.Start()
	defer recv.Close()
	c := newCLI(t)
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_SERVICE_NAME=agentloop-cli-test")
	script := writeSteps(t,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"notes.txt","content":"x"}}],"usage":{"input_tokens":40,"output_tokens":9}}`,
		`{"tool_calls":[{"name":"execute_command","arguments":{"command":"cat notes.txt"}}]}`,
		`{"text":"Written and checked."}`)
	_, errOut, code := c.run("", "run", "--yes", "--dir", t.TempDir(), "--model", "script:"+script, "write notes")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	spans := recv.Spans() // the process has exited: what it sent is here
	count := map[string]int{}
	var root otlptest.Span
	for _, s := range spans {
		count[s.Name]++
		if s.Name == "invoke_agent agentloop" {
			root = s
		}
		if s.Resource["service.name"] != "agentloop-cli-test" {
			t.Fatalf("span %s from service %v", s.Name, s.Resource["service.name"])
		}
	}
	want := map[string]int{"invoke_agent agentloop": 1, "iteration": 3, "chat script.json": 3, "execute_tool write_file": 1, "execute_tool execute_command": 1}
	for name, n := range want {
		if count[name] != n {
			t.Fatalf("%d spans %q, want %d; got %v", count[name], name, n, count)
		}
	}
	if root.Attrs["agentloop.status"] != "completed" || root.Attrs["gen_ai.provider.name"] != "scripted" {
		t.Fatalf("session span %+v", root.Attrs)
	}
}

// An unreachable collector never fails or blocks a session for long: the
// run completes and says the spans could not be sent.
func TestRunWithAnUnreachableCollector(t *testing.T) {
	c := newCLI(t)
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TIMEOUT=500")
	start := time.Now()
	_, errOut, code := c.run("", "run", "--model", "script:"+writeSteps(t, `{"text":"hi"}`), "say hi")
	if code != 0 || time.Since(start) > 20*time.Second {
		t.Fatalf("exit %d after %v\n%s", code, time.Since(start), errOut)
	}
	if !strings.Contains(errOut, "telemetry: ") || !strings.Contains(errOut, "is the collector at OTEL_EXPORTER_OTLP_ENDPOINT running?") {
		t.Fatalf("no word on the spans that could not be sent:\n%s", errOut)
	}
}

// agentloop serve's /metrics carries the GenAI instruments of the
// sessions it ran, beside the server's own.
func TestServeMetricsInPrometheusText(t *testing.T) {
	c := newCLI(t)
	s := c.serve("--model", "script:"+writeSteps(t,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"x"}}],"usage":{"input_tokens":40,"output_tokens":9}}`,
		`{"text":"done","usage":{"input_tokens":60,"output_tokens":1}}`), "--yes")
	defer func() { _ = s.cmd.Process.Signal(syscall.SIGTERM); s.wait(t) }()
	code, body := s.post(t, "/v1/sessions", `{"task":"write a"}`)
	if code != 201 && code != 202 {
		t.Fatalf("%d %s", code, body)
	}
	id := between(body, `"id":"`, `"`)
	s.waitFor(t, id, "completed")
	wants := []string{
		`agentloop_sessions{status="completed"} 1`,
		`gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="scripted",gen_ai_request_model="scripted",gen_ai_token_type="input"} 100`,
		`gen_ai_client_operation_duration_seconds_count{gen_ai_operation_name="chat",gen_ai_provider_name="scripted",gen_ai_request_model="scripted"} 2`,
		`agentloop_tool_calls_total{agentloop_outcome="ok",gen_ai_tool_name="write_file"} 1`,
		`agentloop_http_requests_total{code="2xx"}`,
		`target_info{service_name="agentloop"`,
	}
	// The session's events are measured on the telemetry observer's
	// goroutine after their commit: read until the metrics caught up.
	var out string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(s.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out = string(b)
		if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(out, w) }) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}

// A telemetry setting agentloop cannot honour stops the command before
// any session starts, saying which variable to change.
func TestRunWithAnUnknownTraceExporter(t *testing.T) {
	c := newCLI(t)
	c.env = append(c.env, "OTEL_TRACES_EXPORTER=zipkin")
	_, errOut, code := c.run("", "run", "--model", "script:"+writeSteps(t, `{"text":"hi"}`), "say hi")
	if code == 0 || !strings.Contains(errOut, `OTEL_TRACES_EXPORTER "zipkin"`) || !strings.Contains(errOut, "OTEL_TRACES_EXPORTER=otlp") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	c.env = nil
	if out, errOut, code := c.run("", "sessions", "list"); code != 0 || strings.Contains(out, "say hi") {
		t.Fatalf("a session started anyway (or the list failed: %d %s)", code, errOut)
	}
}
