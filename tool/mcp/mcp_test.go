package mcp

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// memServer serves srv over the SDK's in-memory transport, one session per
// dial, and keeps the server-side sessions so a test can end them.
type memServer struct {
	srv   *sdk.Server
	mu    sync.Mutex
	sess  []*sdk.ServerSession
	dials int
}

func (m *memServer) dial(ctx context.Context) (sdk.Transport, error) {
	ct, st := sdk.NewInMemoryTransports()
	ss, err := m.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.sess = append(m.sess, ss)
	m.dials++
	m.mu.Unlock()
	return ct, nil
}

// kill ends the latest server-side session, as a server going away would.
func (m *memServer) kill() {
	m.mu.Lock()
	ss := m.sess[len(m.sess)-1]
	m.mu.Unlock()
	_ = ss.Close()
}

func connectMem(t *testing.T, cfg ServerConfig) (*Server, *memServer) {
	t.Helper()
	m := &memServer{srv: testServer(false)}
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	cfg.Dial = m.dial
	s, err := Connect(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, m
}

// waitStopped waits until the server's current session has ended.
func waitStopped(t *testing.T, s *Server) {
	t.Helper()
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return
	}
	select {
	case <-c.done:
	case <-t.Context().Done():
		t.Fatal("the session did not end")
	}
}

func names(tools []tool.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Spec().Name)
	}
	return out
}

func byName(t *testing.T, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, x := range tools {
		if x.Spec().Name == name {
			return x
		}
	}
	t.Fatalf("no tool %q among %v", name, names(tools))
	return nil
}

func TestToolsLookLikeBuiltIns(t *testing.T) {
	s, _ := connectMem(t, ServerConfig{})
	tools := s.Tools()
	got := names(tools)
	slices.Sort(got)
	want := []string{"test__add", "test__dotted_name", "test__echo", "test__fail", "test__lookup", "test__loose", "test__picture", "test__wait"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}

	echo := byName(t, tools, "test__echo").Spec()
	if echo.Description != "Echo the text back." {
		t.Errorf("description = %q", echo.Description)
	}
	var schema map[string]any
	if err := json.Unmarshal(echo.Parameters, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("echo schema = %s (%v)", echo.Parameters, err)
	}

	for _, tc := range []struct {
		name       string
		effect     tool.Effect
		idempotent bool
	}{
		{"test__echo", tool.EffectExecute, false},
		{"test__lookup", tool.EffectRead, true},    // readOnlyHint
		{"test__add", tool.EffectExecute, true},    // idempotentHint
		{"test__loose", tool.EffectExecute, false}, // no annotations
	} {
		x := byName(t, tools, tc.name)
		if e := tool.EffectOf(x); e != tc.effect {
			t.Errorf("%s effect = %s, want %s", tc.name, e, tc.effect)
		}
		if i := tool.IsIdempotent(x); i != tc.idempotent {
			t.Errorf("%s idempotent = %v, want %v", tc.name, i, tc.idempotent)
		}
	}
	if w := strings.Join(s.Warnings(), "\n"); !strings.Contains(w, `tool "dotted.name" is offered as "test__dotted_name"`) {
		t.Errorf("warnings = %q", w)
	}
	if rt := byName(t, tools, "test__dotted_name").(*Tool); rt.RemoteName() != "dotted.name" || rt.ServerName() != "test" {
		t.Errorf("remote = %q on %q", rt.RemoteName(), rt.ServerName())
	}

	ctx := t.Context()
	for _, tc := range []struct {
		tool, args string
		want       string
		isError    bool
	}{
		{"test__echo", `{"text":"hello"}`, "hello", false},
		{"test__add", `{"a":2,"b":3}`, `{"sum":5}`, false},
		{"test__picture", `{}`, "here it is\n[image: image/png, 12 KB]\n[audio: audio/wav, 300 B]\n[resource: file:///notes.txt]\nthe notes\n[resource link: file:///big.bin (big.bin)]", false},
		{"test__fail", `{}`, "it broke", true},
		{"test__dotted_name", ``, "dotted ok", false},
		// The schema without "type" was fixed but kept its constraints:
		{"test__loose", `{"x":"y"}`, `loose got {"x":"y"}`, false},
		{"test__loose", `{}`, `invalid tool arguments: tool "test__loose": arguments: missing property 'x'`, true},
		// The registry checks the server's own schema before the call.
		{"test__echo", `{"text":5}`, `argument text: got number, want string`, true},
	} {
		res := reg.Call(ctx, tc.tool, json.RawMessage(tc.args))
		if res.IsError != tc.isError || !strings.Contains(res.Output, tc.want) {
			t.Errorf("%s(%s) = %+v, want %q (error %v)", tc.tool, tc.args, res, tc.want, tc.isError)
		}
	}
}

func TestNamingAndEffectOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    ServerConfig
		want   []string
		effect map[string]tool.Effect
	}{
		{
			name: "prefix",
			cfg:  ServerConfig{Name: "srv", Prefix: "s_", Tools: []string{"echo", "lookup"}},
			want: []string{"s_echo", "s_lookup"},
		},
		{
			name: "no prefix",
			cfg:  ServerConfig{Name: "srv", NoPrefix: true, Tools: []string{"echo", "dotted.name"}},
			want: []string{"dotted_name", "echo"},
		},
		{
			name:   "server effect beats annotations",
			cfg:    ServerConfig{Name: "srv", Effect: tool.EffectWrite, Tools: []string{"echo", "lookup"}},
			want:   []string{"srv__echo", "srv__lookup"},
			effect: map[string]tool.Effect{"srv__echo": tool.EffectWrite, "srv__lookup": tool.EffectWrite},
		},
		{
			name:   "per-tool effect beats the rest",
			cfg:    ServerConfig{Name: "srv", Effect: tool.EffectWrite, ToolEffects: map[string]tool.Effect{"echo": tool.EffectRead}, Tools: []string{"echo", "lookup"}},
			want:   []string{"srv__echo", "srv__lookup"},
			effect: map[string]tool.Effect{"srv__echo": tool.EffectRead, "srv__lookup": tool.EffectWrite},
		},
		{
			name: "sanitised server name",
			cfg:  ServerConfig{Name: "my server", Tools: []string{"echo"}},
			want: []string{"my_server__echo"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := connectMem(t, tc.cfg)
			got := names(s.Tools())
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("tools = %v, want %v", got, tc.want)
			}
			for n, e := range tc.effect {
				if got := tool.EffectOf(byName(t, s.Tools(), n)); got != e {
					t.Errorf("%s effect = %s, want %s", n, got, e)
				}
			}
		})
	}

	s, _ := connectMem(t, ServerConfig{Tools: []string{"echo", "nope"}})
	if w := strings.Join(s.Warnings(), "\n"); !strings.Contains(w, `has no tool "nope"`) {
		t.Errorf("warnings = %q", w)
	}
}

func TestServerRefusal(t *testing.T) {
	s, m := connectMem(t, ServerConfig{})
	m.srv.RemoveTools("echo")
	res, err := byName(t, s.Tools(), "test__echo").Call(t.Context(), json.RawMessage(`{"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Output, `MCP server "test" refused the call to "echo"`) {
		t.Fatalf("result = %+v", res)
	}
	// The server is still fine.
	res, _ = byName(t, s.Tools(), "test__lookup").Call(t.Context(), json.RawMessage(`{"name":"a"}`))
	if res.IsError || res.Output != "found a" {
		t.Fatalf("result = %+v", res)
	}
}

func TestServerThatGoesAway(t *testing.T) {
	t.Run("no reconnect", func(t *testing.T) {
		s, m := connectMem(t, ServerConfig{Reconnects: -1})
		echo := byName(t, s.Tools(), "test__echo")
		m.kill()
		waitStopped(t, s)
		for range 2 {
			res, err := echo.Call(t.Context(), json.RawMessage(`{"text":"x"}`))
			if err != nil {
				t.Fatal(err)
			}
			want := `MCP server "test" is not running (the connection was closed); its tools are unavailable`
			if !res.IsError || res.Output != want {
				t.Fatalf("result = %+v, want %q", res, want)
			}
		}
		if m.dials != 1 {
			t.Errorf("dials = %d, want 1", m.dials)
		}
	})
	t.Run("reconnect once", func(t *testing.T) {
		s, m := connectMem(t, ServerConfig{})
		echo := byName(t, s.Tools(), "test__echo")
		m.kill()
		waitStopped(t, s)
		res, err := echo.Call(t.Context(), json.RawMessage(`{"text":"back"}`))
		if err != nil || res.IsError || res.Output != "back" {
			t.Fatalf("after the first stop: %+v, %v", res, err)
		}
		m.kill()
		waitStopped(t, s)
		res, _ = echo.Call(t.Context(), json.RawMessage(`{"text":"x"}`))
		if !res.IsError || !strings.Contains(res.Output, "is not running") {
			t.Fatalf("after the second stop: %+v", res)
		}
		if m.dials != 2 {
			t.Errorf("dials = %d, want 2", m.dials)
		}
	})
}

func TestCloseAndCancelDuringCall(t *testing.T) {
	started := make(chan struct{}, 1)
	srv := testServer(false)
	sdk.AddTool(srv, &sdk.Tool{Name: "block"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ any) (*sdk.CallToolResult, any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	m := &memServer{srv: srv}
	s, err := Connect(t.Context(), ServerConfig{Name: "test", Dial: m.dial})
	if err != nil {
		t.Fatal(err)
	}
	block := byName(t, s.Tools(), "test__block")

	// A cancelled caller gets its context's error.
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	if _, err := block.Call(ctx, nil); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("cancelled call: err = %v", err)
	}

	// Close ends a call in flight with an error result.
	go func() { <-started; _ = s.Close() }()
	res, err := block.Call(t.Context(), nil)
	if err != nil || !res.IsError || !strings.Contains(res.Output, `MCP server "test" was shut down while tool "block" ran`) {
		t.Fatalf("call during Close: %+v, %v", res, err)
	}
	res, _ = block.Call(t.Context(), nil)
	if !res.IsError || !strings.Contains(res.Output, "MCP server is closed") {
		t.Fatalf("call after Close: %+v", res)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  ServerConfig
		want string
	}{
		{ServerConfig{Command: "x"}, "the name is empty"},
		{ServerConfig{Name: "a"}, `MCP server "a": set either a command (stdio server) or a url`},
		{ServerConfig{Name: "a", Command: "x", URL: "http://h/mcp"}, "set only one of command and url"},
		{ServerConfig{Name: "a", URL: "ftp://h"}, `url "ftp://h" is not an http:// or https:// URL`},
		{ServerConfig{Name: "a", Command: "x", Effect: "delete"}, `effect "delete": use read, write or execute`},
		{ServerConfig{Name: "a", Command: "x", ToolEffects: map[string]tool.Effect{"t": "x"}}, `tool "t": effect "x"`},
		{ServerConfig{Name: "a", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer ${AGENTLOOP_TEST_UNSET_VAR}"}}, `header Authorization: refers to $AGENTLOOP_TEST_UNSET_VAR, which is not set`},
		{ServerConfig{Name: "a", Command: "x", Env: map[string]string{"T": "${AGENTLOOP_TEST_UNSET_VAR}"}}, `env T: refers to $AGENTLOOP_TEST_UNSET_VAR`},
	} {
		_, err := Connect(t.Context(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Connect(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct{ in, want string }{
		{"srv__echo", "srv__echo"},
		{"srv__a.b/c d", "srv__a_b_c_d"},
		{"", "tool"},
		{"ünï", "_n_"},
	} {
		if got := SanitizeName(tc.in); got != tc.want {
			t.Errorf("SanitizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	a, b := SanitizeName(long+"x"), SanitizeName(long+"y")
	if len(a) != MaxNameLength || len(b) != MaxNameLength || a == b {
		t.Errorf("long names: %q, %q", a, b)
	}
	used := map[string]bool{"x": true, "x_2": true}
	if got := uniqueName("x", used); got != "x_3" {
		t.Errorf("uniqueName = %q", got)
	}
}

func TestFixSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string // the schema, as JSON
		note string // part of the note; "" means none
	}{
		{"nil", nil, `{"type":"object","properties":{}}`, ""},
		{"fine", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}, `{"properties":{"a":{"type":"string"}},"type":"object"}`, ""},
		{"no type", map[string]any{"properties": map[string]any{}}, `{"properties":{},"type":"object"}`, ""},
		{"no properties", map[string]any{"type": "object"}, `{"properties":{},"type":"object"}`, ""},
		{"type list", map[string]any{"type": []any{"object", "null"}}, `{"properties":{},"type":"object"}`, ""},
		{"not an object", map[string]any{"type": "string"}, `{"type":"object","properties":{}}`, `has type "string", not object`},
		{"array", []any{1}, `{"type":"object","properties":{}}`, "not a JSON object"},
		{"draft 7 kept", map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": map[string]any{}}, `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{},"type":"object"}`, ""},
		{"unknown dialect", map[string]any{"$schema": "https://example.com/my-dialect", "type": "object", "properties": map[string]any{}}, `{"properties":{},"type":"object"}`, "dialect https://example.com/my-dialect is not supported"},
		{"bad nested keyword", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}, "if": map[string]any{"$ref": "https://example.com/remote.json"}}, `{"properties":{"a":{"type":"string"}},"type":"object"}`, "only its top-level properties are kept"},
		{"bad properties", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"pattern": "("}}}, `{"type":"object","properties":{}}`, "replaced by an empty object schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note := FixSchema(tc.in)
			if string(got) != tc.want {
				t.Errorf("schema = %s, want %s", got, tc.want)
			}
			if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("note = %q, want %q", note, tc.note)
			}
			if _, err := tool.NewRegistry(tool.Func(model.ToolSpec{Name: "t", Parameters: got}, nil)); err != nil {
				t.Errorf("does not compile in the registry: %v", err)
			}
		})
	}
}

func TestFormatResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *sdk.CallToolResult
		want tool.Result
	}{
		{"error without text", &sdk.CallToolResult{IsError: true}, tool.Result{Output: "the tool reported an error without a message", IsError: true}},
		{"structured only", &sdk.CallToolResult{StructuredContent: map[string]any{"n": 1}}, tool.Result{Output: `{"n":1}`}},
		{"texts joined", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, tool.Result{Output: "a\nb"}},
		{"blob resource", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "x:y", MIMEType: "application/pdf", Blob: make([]byte, 3<<20/2)}}}}, tool.Result{Output: "[resource: x:y, application/pdf, 1.5 MB]"}},
	} {
		if got := formatResult(tc.res, 1000, -1); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	long := strings.Repeat("a", 100) + strings.Repeat("z", 100)
	got := formatResult(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: long}}}, 40, -1).Output
	if !strings.HasPrefix(got, strings.Repeat("a", 30)+"\n[... 160 B cut") || !strings.HasSuffix(got, strings.Repeat("z", 10)) {
		t.Errorf("truncated = %q", got)
	}
}
