package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/tool/workspace"
)

// A file tool of an MCP server is held to the workspace like the built-in
// ones: a path out of it — "..", absolute, through a symlink, nested in a
// list of edits, a file:// URI — is refused before the server sees the
// call; a path inside goes through.
func TestMCPFileToolsAreConfinedToTheWorkspace(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(root)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := sdk.NewServer(&sdk.Implementation{Name: "files", Version: "1"}, nil)
	type in struct {
		Path  string `json:"path,omitempty"`
		Edits []struct {
			FilePath string `json:"file_path"`
		} `json:"edits,omitempty"`
		URI string `json:"uri,omitempty"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "read_text_file", Description: "Read a file."}, func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		calls.Add(1)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "read " + a.Path}}}, nil, nil
	})
	m := &memServer{srv: srv}
	s, err := Connect(t.Context(), ServerConfig{Name: "fs", Dial: m.dial, Confine: func(p string) error { _, err := ws.Resolve(p); return err }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	read := byName(t, s.Tools(), "fs__read_text_file")
	for _, args := range []string{
		`{"path":"../outside/secret"}`,
		`{"path":"` + filepath.Join(outside, "secret") + `"}`,
		`{"path":"/etc/passwd"}`,
		`{"path":"link/secret"}`,
		`{"edits":[{"file_path":"ok.txt"},{"file_path":"../../x"}]}`,
		`{"uri":"file:///etc/passwd"}`,
	} {
		res, err := read.Call(t.Context(), json.RawMessage(args))
		if err != nil || !res.IsError || !strings.Contains(res.Output, "workspace") {
			t.Fatalf("%s: %v %+v", args, err, res)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the server saw %d refused calls", n)
	}
	res, err := read.Call(t.Context(), json.RawMessage(`{"path":"sub/ok.txt"}`))
	if err != nil || res.IsError || calls.Load() != 1 {
		t.Fatalf("a path inside was refused: %v %+v", err, res)
	}
}
