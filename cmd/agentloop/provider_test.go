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

// fakeOpenAI speaks Chat Completions streaming (SSE) on loopback: the first
// request gets a tool call whose arguments arrive in fragments after some
// text, the second the final answer, with usage in a chunk after the
// finish chunk, as the real API sends them.
func fakeOpenAI(t *testing.T) (*httptest.Server, func() []map[string]any) {
	var mu sync.Mutex
	var reqs []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad path or key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "bad json", 400)
			return
		}
		mu.Lock()
		reqs = append(reqs, req)
		n := len(reqs)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string, finish string) {
			f := "null"
			if finish != "" {
				f = `"` + finish + `"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, f)
		}
		fmt.Fprint(w, ": keep-alive\n\n")
		if n == 1 {
			chunk(`{"role":"assistant","content":"Let me look."}`, "")
			chunk(`{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"read_file","arguments":""}}]}`, "")
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}`, "")
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"hello.txt\"}"}}]}`, "")
			chunk(`{}`, "tool_calls")
		} else {
			chunk(`{"role":"assistant","content":"The file says "}`, "")
			chunk(`{"content":"hello."}`, "")
			chunk(`{}`, "stop")
		}
		fmt.Fprint(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10,\"total_tokens\":110}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return reqs
	}
}

// agentloop run against an OpenAI-compatible server: streaming, a tool
// call in fragments, the tool result sent back, usage counted.
func TestRunAgainstOpenAICompatibleServer(t *testing.T) {
	srv, requests := fakeOpenAI(t)
	c := newCLI(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello."), 0o644)
	out, errOut, code := c.run("", "run", "--model", "openai/gpt-test", "--base-url", srv.URL+"/v1", "--api-key", "sk-test", "--dir", ws, "what does hello.txt say?")
	if code != exitCompleted || !strings.Contains(out, "The file says hello.") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "220 tokens") {
		t.Fatalf("usage not counted: %s", errOut)
	}
	reqs := requests()
	if len(reqs) != 2 || reqs[0]["stream"] != true {
		t.Fatalf("requests: %v", reqs)
	}
	msgs := reqs[1]["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "tool" || last["tool_call_id"] != "call_abc" || !strings.Contains(fmt.Sprint(last["content"]), "hello.") {
		t.Fatalf("tool result sent back: %v", last)
	}
}

// A wrong key is a clear error naming the provider, the URL and the model.
func TestProviderErrorIsClear(t *testing.T) {
	srv, _ := fakeOpenAI(t)
	c := newCLI(t)
	_, errOut, code := c.run("", "run", "--model", "openai/gpt-test", "--base-url", srv.URL+"/v1", "--api-key", "sk-wrong", "--dir", t.TempDir(), "task")
	if code != exitFailed || !strings.Contains(errOut, "HTTP 401") || !strings.Contains(errOut, srv.URL) || !strings.Contains(errOut, "gpt-test") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// With nothing listening where Ollama should be, the error says how to start it.
func TestOllamaNotRunning(t *testing.T) {
	c := newCLI(t)
	_, errOut, code := c.run("", "run", "--model", "ollama/qwen3:8b", "--base-url", "http://127.0.0.1:1", "--dir", t.TempDir(), "task")
	if code == exitCompleted || !strings.Contains(errOut, "ollama serve") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
