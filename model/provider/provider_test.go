package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/anthropic"
	"github.com/agentloop/agentloop/model/ollama"
	"github.com/agentloop/agentloop/model/openai"
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec, provider, name, err string
	}{
		{spec: "", provider: "ollama", name: "qwen3:8b"},
		{spec: "ollama/qwen3:8b", provider: "ollama", name: "qwen3:8b"},
		{spec: "openrouter/meta-llama/llama-3.3-70b-instruct", provider: "openrouter", name: "meta-llama/llama-3.3-70b-instruct"},
		{spec: "OpenAI/gpt-4.1-mini", provider: "openai", name: "gpt-4.1-mini"},
		{spec: "qwen3:8b", err: `model "qwen3:8b": write it as PROVIDER/NAME, e.g. ollama/qwen3:8b (providers: ollama, openai, anthropic, openrouter, deepseek, gemini, vllm, lmstudio, llamacpp)`},
		{spec: "openai/", err: `model "openai/": the model name after "openai/" is missing, e.g. openai/gpt-4.1-mini`},
	}
	for _, tt := range tests {
		p, n, err := Parse(tt.spec)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Parse(%q) error %v, want %s", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil || p != tt.provider || n != tt.name {
			t.Errorf("Parse(%q) = %q, %q, %v", tt.spec, p, n, err)
		}
	}
}

func TestOpen(t *testing.T) {
	env := map[string]string{
		"OPENAI_API_KEY": "sk-env", "ANTHROPIC_API_KEY": "sk-ant-env", "OPENROUTER_API_KEY": "or-env",
		"DEEPSEEK_API_KEY": "ds-env", "GEMINI_API_KEY": "gm-env",
	}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		spec   string
		opts   Options
		typ    any
		errSub string
	}{
		{spec: "", typ: &ollama.Client{}},
		{spec: "ollama/llama3.2", typ: &ollama.Client{}},
		{spec: "openai/gpt-4.1-mini", typ: &openai.Client{}},
		{spec: "anthropic/claude-sonnet-4-5", typ: &anthropic.Client{}},
		{spec: "openrouter/meta-llama/llama-3.3-70b-instruct", typ: &openai.Client{}},
		{spec: "deepseek/deepseek-chat", typ: &openai.Client{}},
		{spec: "gemini/gemini-2.5-flash", typ: &openai.Client{}},
		{spec: "vllm/Qwen/Qwen3-8B", typ: &openai.Client{}},
		{spec: "lmstudio/qwen3-8b", typ: &openai.Client{}},
		{spec: "llamacpp/any", typ: &openai.Client{}},
		{spec: "mistral/large", errSub: `unknown provider "mistral"; known providers: ollama, openai, anthropic, openrouter, deepseek, gemini, vllm, lmstudio, llamacpp`},
		{spec: "openai/gpt-4.1-mini", opts: Options{Getenv: func(string) string { return "" }}, errSub: "openai: no API key for model gpt-4.1-mini — set OPENAI_API_KEY or pass --api-key"},
		{spec: "anthropic/claude-sonnet-4-5", opts: Options{APIKey: "sk-flag", Getenv: func(string) string { return "" }}, typ: &anthropic.Client{}},
	}
	for _, tt := range tests {
		if tt.opts.Getenv == nil {
			tt.opts.Getenv = getenv
		}
		m, err := Open(tt.spec, tt.opts)
		if tt.errSub != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errSub) {
				t.Errorf("Open(%q): error %v, want %q", tt.spec, err, tt.errSub)
			}
			continue
		}
		if err != nil {
			t.Errorf("Open(%q): %v", tt.spec, err)
			continue
		}
		if got, want := typeName(m), typeName(tt.typ); got != want {
			t.Errorf("Open(%q) = %s, want %s", tt.spec, got, want)
		}
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// TestOpenWiring checks that Open sends the key, the model name, the path
// and the provider name in errors, against a loopback server.
func TestOpenWiring(t *testing.T) {
	type seen struct{ path, auth string }
	tests := []struct {
		spec, wantPath, wantAuth, wantErr string
		authHeader                        string
	}{
		{spec: "openrouter/meta-llama/llama-3.3-70b-instruct", wantPath: "/chat/completions", authHeader: "Authorization", wantAuth: "Bearer or-env", wantErr: "openrouter: HTTP 401 from"},
		{spec: "openai/gpt-4.1-mini", wantPath: "/chat/completions", authHeader: "Authorization", wantAuth: "Bearer sk-env", wantErr: "— check --api-key or OPENAI_API_KEY"},
		{spec: "anthropic/claude-sonnet-4-5", wantPath: "/v1/messages", authHeader: "X-Api-Key", wantAuth: "sk-ant-env", wantErr: "anthropic: HTTP 401"},
		{spec: "ollama/qwen3:8b", wantPath: "/api/chat", authHeader: "Authorization", wantAuth: "", wantErr: "ollama: HTTP 401"},
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-env", "ANTHROPIC_API_KEY": "sk-ant-env", "OPENROUTER_API_KEY": "or-env"}
	for _, tt := range tests {
		var got seen
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = seen{path: r.URL.Path, auth: r.Header.Get(tt.authHeader)}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_, _ = w.Write([]byte(`{"error":{"message":"bad key","type":"authentication_error"}}`))
		}))
		m, err := Open(tt.spec, Options{BaseURL: srv.URL, Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Generate(t.Context(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil)
		srv.Close()
		if got.path != tt.wantPath || got.auth != tt.wantAuth {
			t.Errorf("%s: request %+v", tt.spec, got)
		}
		_, name, _ := Parse(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "(model "+name+"): bad key") {
			t.Errorf("%s: error %v", tt.spec, err)
		}
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != 401 {
			t.Errorf("%s: not a *StatusError: %v", tt.spec, err)
		}
	}
}

func TestOllamaHost(t *testing.T) {
	in := &known[0]
	for v, want := range map[string]string{
		"0.0.0.0:11434":          "http://127.0.0.1:11434",
		"gpu-box":                "http://gpu-box:11434",
		"https://ollama.example": "https://ollama.example",
		"":                       "",
	} {
		if got := baseFromEnv(in, v); got != want {
			t.Errorf("OLLAMA_HOST=%q: %q, want %q", v, got, want)
		}
	}
}

// Options.Retry and Options.Timeouts reach every kind of provider.
func TestOptionsPolicies(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
	for _, spec := range []string{"openai/m", "anthropic/m", "ollama/m"} {
		var mu sync.Mutex
		calls, slept := 0, 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		retry := Retry{MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { slept++; return nil }}
		m, err := Open(spec, Options{BaseURL: srv.URL, Getenv: func(k string) string { return env[k] }, Retry: retry})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Generate(t.Context(), req, nil)
		mu.Lock()
		n := calls
		mu.Unlock()
		if err == nil || n != 3 || slept != 2 {
			t.Errorf("%s: %d calls, %d sleeps, error %v; want 3 calls, 2 sleeps", spec, n, slept, err)
		}
		srv.Close()

		release := make(chan struct{})
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
		m, err = Open(spec, Options{BaseURL: hang.URL, Getenv: func(k string) string { return env[k] },
			Timeouts: Timeouts{Total: 50 * time.Millisecond}, Retry: Retry{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // a regression fails, not hangs
		_, err = m.Generate(ctx, req, nil)
		cancel()
		if !errors.Is(err, model.ErrTimeout) {
			t.Errorf("%s: error %v, want model.ErrTimeout", spec, err)
		}
		close(release)
		hang.Close()
	}
}
