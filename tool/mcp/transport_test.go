package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/openai"
)

// requestLog counts requests by method, for asserting which transport was
// tried.
type requestLog struct {
	mu    sync.Mutex
	posts int
	gets  int
	bare  int // POSTs without an SSE session id: streamable HTTP attempts
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		switch r.Method {
		case http.MethodPost:
			l.posts++
			if r.URL.Query().Get("sessionid") == "" {
				l.bare++
			}
		case http.MethodGet:
			l.gets++
		}
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *requestLog) counts() (posts, gets int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.posts, l.gets
}

// sseServer serves the test server over the 2024-11-05 HTTP+SSE
// transport only: a POST to its URL without a session is refused with 400,
// as such servers do.
func sseServer(t *testing.T) (*httptest.Server, *requestLog) {
	t.Helper()
	srv := testServer(false)
	log := &requestLog{}
	ts := httptest.NewServer(log.wrap(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	t.Cleanup(ts.Close)
	return ts, log
}

func TestSSEServer(t *testing.T) {
	for _, transport := range []string{TransportSSE, ""} {
		t.Run("transport="+transport, func(t *testing.T) {
			ts, log := sseServer(t)
			s, err := Connect(t.Context(), ServerConfig{Name: "old", URL: ts.URL, Transport: transport, HTTPClient: ts.Client()})
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if res, err := byName(t, s.Tools(), "old__echo").Call(t.Context(), []byte(`{"text":"over sse"}`)); err != nil || res.IsError || res.Output != "over sse" {
				t.Fatalf("echo: %+v, %v", res, err)
			}
			if s.spoken != TransportSSE {
				t.Fatalf("spoken = %q", s.spoken)
			}
			log.mu.Lock()
			bare := log.bare
			log.mu.Unlock()
			if tried := bare > 0; tried != (transport == "") {
				t.Errorf("%d streamable HTTP attempts at Connect with transport %q", bare, transport)
			}

			// The server drops every connection (a restart): the SSE stream
			// ends, and the next call reconnects over SSE straight away.
			ts.CloseClientConnections()
			waitStopped(t, s)
			if res, err := byName(t, s.Tools(), "old__echo").Call(t.Context(), []byte(`{"text":"again"}`)); err != nil || res.IsError || res.Output != "again" {
				t.Fatalf("echo after the restart: %+v, %v", res, err)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			if log.bare != bare {
				t.Errorf("the reconnect tried streamable HTTP again (%d attempts, %d before)", log.bare, bare)
			}
		})
	}
}

func TestStreamableDoesNotFallBackOnRefusal(t *testing.T) {
	ts := httpServer(t, "right")
	log := &requestLog{}
	ts.Config.Handler = log.wrap(ts.Config.Handler)
	_, err := Connect(t.Context(), ServerConfig{Name: "web", URL: ts.URL, HTTPClient: ts.Client(), Headers: map[string]string{"Authorization": "Bearer wrong"}})
	if err == nil || !strings.Contains(err.Error(), "the server refused the credentials (HTTP 401): give a token with bearer_token_env") {
		t.Fatalf("Connect = %v", err)
	}
	if _, gets := log.counts(); gets != 0 {
		t.Errorf("%d GETs: a refusal must not fall back to SSE", gets)
	}
	// Told to speak streamable HTTP only, an SSE server is not tried with SSE.
	sts, _ := sseServer(t)
	if _, err := Connect(t.Context(), ServerConfig{Name: "old", URL: sts.URL, Transport: TransportStreamable, HTTPClient: sts.Client()}); err == nil {
		t.Fatal("streamable-only Connect to an SSE server succeeded")
	}
}

func TestBearerTokenEnv(t *testing.T) {
	ts := httpServer(t, "tok-789")
	t.Setenv("AGENTLOOP_TEST_MCP_TOKEN", " tok-789\n")
	cfg := ServerConfig{Name: "web", URL: ts.URL, HTTPClient: ts.Client(), BearerTokenEnv: "AGENTLOOP_TEST_MCP_TOKEN"}
	s, err := Connect(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	_ = s.Close()
	t.Setenv("AGENTLOOP_TEST_MCP_TOKEN", "")
	if _, err := Connect(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "$AGENTLOOP_TEST_MCP_TOKEN is not set or empty") {
		t.Fatalf("Connect without the token = %v", err)
	}
	cfg.Headers = map[string]string{"authorization": "Bearer x"}
	if _, err := Connect(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("Connect with both = %v", err)
	}
	if _, err := Connect(t.Context(), ServerConfig{Name: "x", URL: ts.URL, Transport: "websocket"}); err == nil || !strings.Contains(err.Error(), `transport "websocket": use streamable or sse`) {
		t.Fatalf("Connect with a bad transport = %v", err)
	}
}

// A server that restarts between calls forgets the session: a read-only or
// idempotent tool's call is sent again on a new session and succeeds; a
// call of any other tool is reported, never repeated.
func TestRepeatableCallRetriedAfterRestart(t *testing.T) {
	srv := testServer(false)
	var h atomic.Pointer[sdk.StreamableHTTPHandler]
	restart := func() {
		h.Store(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	}
	restart()
	log := &requestLog{}
	ts := httptest.NewServer(log.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Load().ServeHTTP(w, r) })))
	t.Cleanup(ts.Close)
	s, err := Connect(t.Context(), ServerConfig{Name: "web", URL: ts.URL, HTTPClient: ts.Client(), Reconnects: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	restart()
	if res, err := byName(t, s.Tools(), "web__lookup").Call(t.Context(), []byte(`{"name":"x"}`)); err != nil || res.IsError || res.Output != "found x" {
		t.Fatalf("read-only call across a restart: %+v, %v", res, err)
	}
	restart()
	if res, err := byName(t, s.Tools(), "web__add").Call(t.Context(), []byte(`{"a":2,"b":3}`)); err != nil || res.IsError || res.Output != `{"sum":5}` {
		t.Fatalf("idempotent call across a restart: %+v, %v", res, err)
	}
	// No reconnects left: the retry is not made and the error says why.
	restart()
	res, err := byName(t, s.Tools(), "web__lookup").Call(t.Context(), []byte(`{"name":"y"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Output, `MCP server "web" is not reachable`) {
		t.Fatalf("read-only call with no reconnects left: %+v, %v", res, err)
	}

	s2, err := Connect(t.Context(), ServerConfig{Name: "web", URL: ts.URL, HTTPClient: ts.Client(), Reconnects: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	restart()
	before, _ := log.counts()
	res, err = byName(t, s2.Tools(), "web__echo").Call(t.Context(), []byte(`{"text":"once"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Output, `MCP server "web" is not reachable`) {
		t.Fatalf("unannotated call across a restart: %+v, %v", res, err)
	}
	if after, _ := log.counts(); after-before != 1 {
		t.Errorf("%d POSTs for an unannotated call that failed, want 1 (never resent)", after-before)
	}
}

// An image a tool returns reaches a provider's request body as an image,
// in the provider's wire format, and stays described in the text.
func TestImageReachesProvider(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	srv := sdk.NewServer(&sdk.Implementation{Name: "shots", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "screenshot", Description: "Take a screenshot."}, func(context.Context, *sdk.CallToolRequest, any) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the screen"}, &sdk.ImageContent{MIMEType: "image/png", Data: png}}}, nil, nil
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	s, err := Connect(t.Context(), ServerConfig{Name: "shots", URL: ts.URL, HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	res, err := byName(t, s.Tools(), "shots__screenshot").Call(t.Context(), []byte(`{}`))
	if err != nil || res.IsError || res.Output != "the screen\n[image: image/png, 16 B]" || len(res.Images) != 1 {
		t.Fatalf("screenshot: %+v, %v", res, err)
	}

	var body []byte
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":"A screen."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`)
	}))
	t.Cleanup(provider.Close)
	m := openai.New(openai.Config{BaseURL: provider.URL + "/v1", APIKey: "sk-test", Model: "gpt-4.1-mini"})
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: "What is on screen?"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "shots__screenshot", Arguments: json.RawMessage(`{}`)}}},
		{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "shots__screenshot", Content: res.Output, Images: res.Images},
	}}
	if _, err := m.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"role":"tool","content":"the screen\n[image: image/png, 16 B]","tool_call_id":"call_1"},` +
		`{"role":"user","content":[{"type":"text","text":"The images returned by tool call call_1 (shots__screenshot):"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(png) + `"}}]}]`
	if !strings.Contains(string(body), want) {
		t.Fatalf("provider request\n%s\nlacks\n%s", body, want)
	}
}
