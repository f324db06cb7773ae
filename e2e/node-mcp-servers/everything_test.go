// Package nodemcpservers_test runs agentloop's MCP client (tool/mcp)
// against a real MCP server from npm, @modelcontextprotocol/server-everything,
// over stdio, the older HTTP+SSE transport and streamable HTTP.
package nodemcpservers_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/nodetest"
	"github.com/agentloop/agentloop/internal/testport"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/anthropic"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

func everything(t *testing.T) string {
	dir := nodetest.Project(t, "e2e/node-mcp-servers")
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

func byName(t *testing.T, s *mcp.Server, name string) tool.Tool {
	t.Helper()
	var names []string
	for _, tl := range s.Tools() {
		if tl.Spec().Name == name {
			return tl
		}
		names = append(names, tl.Spec().Name)
	}
	t.Fatalf("no tool %q among %v", name, names)
	return nil
}

// The image get-tiny-image returns reaches an Anthropic request body as a
// base64 image block inside the tool_result, with the text around it.
func TestImageFromNpmServerReachesProvider(t *testing.T) {
	s, err := mcp.Connect(t.Context(), mcp.ServerConfig{Name: "everything", Command: "node", Args: []string{everything(t), "stdio"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	res, err := byName(t, s, "everything__get-tiny-image").Call(t.Context(), json.RawMessage(`{}`))
	if err != nil || res.IsError || len(res.Images) != 1 {
		t.Fatalf("get-tiny-image: %+v, %v", res, err)
	}
	img := res.Images[0]
	if img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("image %s, %q…", img.MIMEType, img.Data[:8])
	}
	if !strings.Contains(res.Output, "[image: image/png, ") {
		t.Fatalf("the text lost the image's description: %q", res.Output)
	}

	var body []byte
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"A logo."}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":3}}`)
	}))
	t.Cleanup(provider.Close)
	m := anthropic.New(anthropic.Config{BaseURL: provider.URL, APIKey: "sk-ant-test", Model: "claude-sonnet-4-5"})
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: "Show me the logo."},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "toolu_1", Name: "everything__get-tiny-image", Arguments: json.RawMessage(`{}`)}}},
		{Role: model.RoleTool, ToolCallID: "toolu_1", Content: res.Output, Images: res.Images},
	}}
	if _, err := m.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + base64.StdEncoding.EncodeToString(img.Data) + `"}}`
	if !strings.Contains(string(body), `{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":`) || !strings.Contains(string(body), want) {
		t.Fatalf("provider request lacks the tool_result image:\n%s", body)
	}
}

// serve starts the server in an HTTP mode on port and waits until it
// listens.
func serve(t *testing.T, script, mode string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("node", script, mode)
	cmd.Env = append(cmd.Environ(), "PORT="+strconv.Itoa(port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		listening := false
		for sc.Scan() {
			if !listening && strings.Contains(sc.Text(), "port "+strconv.Itoa(port)) {
				listening = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("server-everything %s did not start listening on port %d", mode, port)
	}
	return cmd
}

// Its SSE mode refuses streamable HTTP (404 on POST /sse): the client falls
// back to the HTTP+SSE transport by itself.
func TestNpmSSEServer(t *testing.T) {
	script := everything(t)
	port := testport.Port(t)
	serve(t, script, "sse", port)
	s, err := mcp.Connect(t.Context(), mcp.ServerConfig{Name: "everything", URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/sse"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	res, err := byName(t, s, "everything__echo").Call(t.Context(), json.RawMessage(`{"message":"over sse"}`))
	if err != nil || res.IsError || !strings.Contains(res.Output, "over sse") {
		t.Fatalf("echo: %+v, %v", res, err)
	}
}

// The server restarts between two calls of a read-only tool: the second
// call is sent again on a new session and succeeds.
func TestNpmServerRestartReadOnlyCall(t *testing.T) {
	script := everything(t)
	port := testport.Port(t)
	first := serve(t, script, "streamableHttp", port)
	s, err := mcp.Connect(t.Context(), mcp.ServerConfig{Name: "everything", URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	image := byName(t, s, "everything__get-tiny-image")
	if res, err := image.Call(t.Context(), json.RawMessage(`{}`)); err != nil || res.IsError {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	_ = first.Process.Kill()
	_ = first.Wait()
	serve(t, script, "streamableHttp", port)
	res, err := image.Call(t.Context(), json.RawMessage(`{}`))
	if err != nil || res.IsError || len(res.Images) != 1 {
		t.Fatalf("read-only call after the restart: %+v, %v", res, err)
	}
}
