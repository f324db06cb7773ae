package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentloop/agentloop/telemetry/otlptest"
)

// traceparent is the W3C Trace Context header: version 00, a trace id, the
// caller's span id, flags.
var traceparent = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$`)

// providerHearing is an OpenAI-compatible server on loopback that keeps
// the traceparent of every request and answers with serve.
type providerHearing struct {
	*httptest.Server
	mu      sync.Mutex
	parents []string // each request's traceparent header, "" for none
}

func newProviderHearing(t *testing.T, serve func(n int, w http.ResponseWriter)) *providerHearing {
	p := &providerHearing{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		p.mu.Lock()
		p.parents = append(p.parents, r.Header.Get("Traceparent"))
		n := len(p.parents)
		p.mu.Unlock()
		serve(n, w)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *providerHearing) heard() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.parents)
}

// sseReply writes a streamed Chat Completions reply from the model
// answered (as a provider names the model it routed to).
func sseReply(w http.ResponseWriter, answered, delta, finish string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%q}]}\n\n", answered, delta, finish)
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,\"total_tokens\":13}}\n\n", answered)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// servedSession runs one session against prov in agentloop serve, waits
// until it is in one of statuses, and stops the server (which sends its
// spans as it exits). It returns the session's state as JSON.
func servedSession(t *testing.T, c *cli, prov *providerHearing, statuses ...string) string {
	t.Helper()
	s := c.serve("--yes", "--workspaces", t.TempDir(), "--model", "openai/gpt-test", "--base-url", prov.URL+"/v1", "--api-key", "k")
	code, out := s.post(t, "/v1/sessions", `{"task":"write a.txt"}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, out)
	}
	var r struct{ ID string }
	json.Unmarshal([]byte(out), &r)
	s.waitFor(t, r.ID, statuses...)
	resp, err := http.Get(s.url + "/v1/sessions/" + r.ID)
	if err != nil {
		t.Fatal(err)
	}
	state, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, s.errText())
	}
	return string(state)
}

// A provider that traces joins the session's trace: every request carries
// a traceparent naming the session's trace and the span of that very
// model call, and that span, exported, says which server answered
// (server.address, server.port) and which model it says answered
// (gen_ai.response.model).
func TestProviderJoinsTheSessionsTrace(t *testing.T) {
	recv := otlptest.Start()
	defer recv.Close()
	prov := newProviderHearing(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			sseReply(w, "gpt-test-2025-01-01", `{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.txt\",\"content\":\"x\"}"}}]}`, "tool_calls")
			return
		}
		sseReply(w, "gpt-test-2025-01-01", `{"role":"assistant","content":"Written."}`, "stop")
	})
	c := newCLI(t)
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL)
	servedSession(t, c, prov, "completed")
	heard := prov.heard()
	if len(heard) != 2 {
		t.Fatalf("%d requests, want 2", len(heard))
	}
	spans := recv.Spans()
	chats := map[string]otlptest.Span{} // by span id
	for _, s := range spans {
		if s.Name == "chat gpt-test" {
			chats[s.SpanID] = s
		}
	}
	if len(chats) != 2 {
		t.Fatalf("%d model call spans, want 2: %v", len(chats), spans)
	}
	for i, h := range heard {
		m := traceparent.FindStringSubmatch(h)
		if m == nil {
			t.Fatalf("request %d: traceparent %q", i+1, h)
		}
		for _, s := range spans {
			if s.TraceID != m[1] {
				t.Fatalf("request %d names trace %s; span %s is in trace %s", i+1, m[1], s.Name, s.TraceID)
			}
		}
		chat, ok := chats[m[2]]
		if !ok {
			t.Fatalf("request %d names span %s, which is no model call span exported", i+1, m[2])
		}
		delete(chats, m[2]) // each call names its own span
		host := strings.TrimPrefix(prov.URL, "http://")
		if got := fmt.Sprintf("%v:%v", chat.Attrs["server.address"], chat.Attrs["server.port"]); got != host {
			t.Errorf("span of request %d: server %s, want %s", i+1, got, host)
		}
		if chat.Attrs["gen_ai.response.model"] != "gpt-test-2025-01-01" || chat.Attrs["gen_ai.request.model"] != "gpt-test" {
			t.Errorf("span of request %d: %v", i+1, chat.Attrs)
		}
		if chat.Error || chat.Attrs["error.type"] != nil {
			t.Errorf("span of a call that succeeded: %+v", chat)
		}
	}
}

// A call that fails says what failed on its span: rate_limited for a 429,
// http_<status> for another refusal. The provider still hears the
// session's trace on every attempt, retries included.
func TestFailedModelCallSaysWhatFailed(t *testing.T) {
	for status, want := range map[int]string{429: "rate_limited", 500: "http_500", 400: "http_400"} {
		t.Run(want, func(t *testing.T) {
			t.Parallel()
			recv := otlptest.Start()
			defer recv.Close()
			prov := newProviderHearing(t, func(_ int, w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprint(w, `{"error":{"message":"no"}}`)
			})
			c := newCLI(t)
			c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL)
			if st := servedSession(t, c, prov, "paused", "failed", "error"); !strings.Contains(st, fmt.Sprintf("HTTP %d", status)) {
				t.Fatalf("the session does not say what failed: %s", st)
			}
			var failed []otlptest.Span
			trace := ""
			for _, s := range recv.Spans() {
				if s.Name == "chat gpt-test" {
					failed = append(failed, s)
				}
				trace = s.TraceID
			}
			if len(failed) == 0 {
				t.Fatalf("no model call span: %v", recv.Spans())
			}
			for _, s := range failed {
				if !s.Error || s.Attrs["error.type"] != want {
					t.Errorf("span %+v, want error.type %s", s, want)
				}
			}
			for i, h := range prov.heard() {
				if m := traceparent.FindStringSubmatch(h); m == nil || m[1] != trace {
					t.Errorf("attempt %d: traceparent %q, want one of trace %s", i+1, h, trace)
				}
			}
		})
	}
}

// agentloop run's model calls join the session's trace as serve's do.
func TestRunSendsTheSessionsTraceToTheProvider(t *testing.T) {
	recv := otlptest.Start()
	defer recv.Close()
	prov := newProviderHearing(t, func(_ int, w http.ResponseWriter) {
		sseReply(w, "gpt-test-2025-01-01", `{"role":"assistant","content":"Hello."}`, "stop")
	})
	c := newCLI(t)
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL)
	_, errOut, code := c.run("", "run", "--model", "openai/gpt-test", "--base-url", prov.URL+"/v1", "--api-key", "k", "--dir", t.TempDir(), "say hello")
	if code != exitCompleted {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	heard := prov.heard()
	m := traceparent.FindStringSubmatch(heard[0])
	if len(heard) != 1 || m == nil {
		t.Fatalf("traceparents %q", heard)
	}
	for _, s := range recv.Spans() {
		if s.TraceID != m[1] || s.Name == "chat gpt-test" && (s.SpanID != m[2] || s.Attrs["gen_ai.response.model"] != "gpt-test-2025-01-01") {
			t.Fatalf("the provider heard %s; span %+v", heard[0], s)
		}
	}
}
