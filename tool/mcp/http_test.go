package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer serves the test server over streamable HTTP, refusing
// requests without the expected bearer token.
func httpServer(t *testing.T, token string) *httptest.Server {
	t.Helper()
	srv := testServer(false)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestHTTPServer(t *testing.T) {
	t.Setenv("AGENTLOOP_TEST_TOKEN", "tok-456")
	ts := httpServer(t, "tok-456")
	s, err := Connect(t.Context(), ServerConfig{
		Name:       "web",
		URL:        ts.URL,
		Headers:    map[string]string{"Authorization": "Bearer ${AGENTLOOP_TEST_TOKEN}"},
		HTTPClient: ts.Client(),
		Reconnects: -1,
	})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })

	res, err := byName(t, s.Tools(), "web__echo").Call(t.Context(), []byte(`{"text":"over http"}`))
	if err != nil || res.IsError || res.Output != "over http" {
		t.Fatalf("echo: %+v, %v", res, err)
	}
	res, _ = byName(t, s.Tools(), "web__add").Call(t.Context(), []byte(`{"a":1,"b":2}`))
	if res.Output != `{"sum":3}` {
		t.Fatalf("add: %+v", res)
	}

	ts.Close() // the server goes away
	for range 2 {
		res, err = byName(t, s.Tools(), "web__echo").Call(t.Context(), []byte(`{"text":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		want := `MCP server "web" is not reachable at ` + ts.URL + ` (connection lost: `
		if !res.IsError || !strings.HasPrefix(res.Output, want) || !strings.HasSuffix(res.Output, "; its tools are unavailable") {
			t.Fatalf("after the server closed: %+v", res)
		}
	}
}

func TestHTTPServerRefusesConnect(t *testing.T) {
	ts := httpServer(t, "right")
	_, err := Connect(t.Context(), ServerConfig{Name: "web", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer wrong"}, HTTPClient: ts.Client()})
	if err == nil || !strings.Contains(err.Error(), `MCP server "web": connecting to `+ts.URL) {
		t.Fatalf("Connect = %v", err)
	}
	t.Log(err)
}

func TestHTTPServerReconnect(t *testing.T) {
	// A server that forgets its sessions (a restart) is reached again once.
	srv := testServer(false)
	var h atomic.Pointer[sdk.StreamableHTTPHandler]
	h.Store(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Load().ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	s, err := Connect(t.Context(), ServerConfig{Name: "web", URL: ts.URL, HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	echo := byName(t, s.Tools(), "web__echo")
	if res, _ := echo.Call(t.Context(), []byte(`{"text":"one"}`)); res.Output != "one" {
		t.Fatalf("first call: %+v", res)
	}
	// A new handler knows no sessions: the old session id now gets 404.
	h.Store(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	res, _ := echo.Call(t.Context(), []byte(`{"text":"two"}`))
	if !res.IsError || !strings.Contains(res.Output, `MCP server "web" is not reachable`) {
		t.Fatalf("call to the forgotten session: %+v", res)
	}
	if res, _ := echo.Call(t.Context(), []byte(`{"text":"three"}`)); res.IsError || res.Output != "three" {
		t.Fatalf("call after reconnect: %+v", res)
	}
}
