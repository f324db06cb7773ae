package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// wireServer answers every request with a plain final answer in one
// provider's wire format (streamed when the request asks for it) and keeps
// the request bodies.
type wireServer struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (s *wireServer) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

func (s *wireServer) record(t *testing.T, r *http.Request) map[string]any {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Errorf("request body is not JSON: %v %q", err, raw)
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	return body
}

func startWireServer(t *testing.T, format string) (*httptest.Server, *wireServer) {
	ws := &wireServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := ws.record(t, r)
		stream := body["stream"] == true
		switch format {
		case "openai":
			if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
				http.NotFound(w, r)
				return
			}
			if !stream {
				fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"done\"},\"finish_reason\":null}]}\n\n")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1,\"total_tokens\":11}}\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
		case "ollama":
			if r.URL.Path != "/api/chat" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/x-ndjson")
			if stream {
				fmt.Fprint(w, `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"done"},"done":false}`+"\n")
				fmt.Fprint(w, `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":10,"eval_count":1}`+"\n")
				return
			}
			fmt.Fprint(w, `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"done"},"done":true,"done_reason":"stop","prompt_eval_count":10,"eval_count":1}`)
		case "anthropic":
			if r.URL.Path != "/v1/messages" {
				http.NotFound(w, r)
				return
			}
			if !stream {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":1}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range []string{
				`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":0}}}`,
				`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done"}}`,
				`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
				`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`,
				`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
			} {
				fmt.Fprint(w, ev+"\n\n")
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, ws
}

// Every provider receives its own bare model name on the wire, while the
// session records the PROVIDER/NAME spec it was started with.
func TestProvidersReceiveBareModelName(t *testing.T) {
	cases := []struct {
		spec, format, base, wire string
	}{
		{"openai/gpt-4.1-mini", "openai", "/v1", "gpt-4.1-mini"},
		{"openrouter/anthropic/claude-3.7-sonnet", "openai", "/api/v1", "anthropic/claude-3.7-sonnet"},
		{"ollama/qwen3:8b", "ollama", "", "qwen3:8b"},
		{"anthropic/claude-sonnet-4-5", "anthropic", "", "claude-sonnet-4-5"},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			srv, ws := startWireServer(t, tc.format)
			c := newCLI(t)
			out, errOut, code := c.run("", "run", "--model", tc.spec, "--base-url", srv.URL+tc.base, "--api-key", "k",
				"--dir", t.TempDir(), "--yes", "say done")
			if code != exitCompleted || !strings.Contains(out, "done") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			reqs := ws.requests()
			if len(reqs) == 0 {
				t.Fatal("the server got no request")
			}
			for i, r := range reqs {
				if r["model"] != tc.wire {
					t.Errorf("request %d sent model %q, want %q", i+1, r["model"], tc.wire)
				}
			}
			show, _, _ := c.run("", "sessions", "show", "--json", sessionID(t, c))
			var st struct{ Model string }
			if err := json.Unmarshal([]byte(show), &st); err != nil || st.Model != tc.spec {
				t.Fatalf("recorded model %q (err %v), want %q", st.Model, err, tc.spec)
			}
		})
	}
}

// Ollama with tools: "stream": false and a context window large enough for
// an agent session by default; --num-ctx, --stream-tools and the profile's
// num_ctx / stream_tools change them.
func TestOllamaRequestWithTools(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("profiles:\n  local:\n    model: ollama/qwen3:8b\n    num_ctx: 16384\n    stream_tools: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		stream bool
		numCtx float64
	}{
		{"defaults", nil, false, 32768},
		{"flags", []string{"--num-ctx", "65536", "--stream-tools"}, true, 65536},
		{"profile", []string{"--config", cfg, "--profile", "local"}, true, 16384},
		{"flag over profile", []string{"--config", cfg, "--profile", "local", "--num-ctx", "8192"}, true, 8192},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, ws := startWireServer(t, "ollama")
			c := newCLI(t)
			args := append([]string{"run", "--model", "ollama/qwen3:8b", "--base-url", srv.URL, "--dir", t.TempDir(), "--yes"}, tc.args...)
			out, errOut, code := c.run("", append(args, "say done")...)
			if code != exitCompleted || !strings.Contains(out, "done") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			r := ws.requests()[0]
			opts, _ := r["options"].(map[string]any)
			if r["stream"] != tc.stream || opts["num_ctx"] != tc.numCtx || len(r["tools"].([]any)) == 0 {
				t.Fatalf("stream=%v options=%v tools=%d, want stream=%v num_ctx=%v", r["stream"], opts, len(r["tools"].([]any)), tc.stream, tc.numCtx)
			}
		})
	}
	c := newCLI(t)
	if _, errOut, code := c.run("", "run", "--model", "ollama/qwen3:8b", "--num-ctx", "-1", "task"); code != exitUsage || !strings.Contains(errOut, "negative") {
		t.Fatalf("--num-ctx -1: exit %d %s", code, errOut)
	}
}
