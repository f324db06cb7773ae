package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server: run with serverEnv=1 it
// serves testServer over stdin/stdout instead of running the tests.
const serverEnv = "AGENTLOOP_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		if err := testServer(true).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type textIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type nameIn struct {
	Name string `json:"name"`
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// testServer is a real MCP server built with the SDK. With stdio set it
// also offers tools that only make sense in a separate process.
func testServer(stdio bool) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back."}, func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two numbers.", Annotations: &sdk.ToolAnnotations{IdempotentHint: true}}, func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
		return nil, addOut{Sum: in.A + in.B}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "lookup", Description: "Look something up.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *sdk.CallToolRequest, in nameIn) (*sdk.CallToolResult, any, error) {
		return text("found " + in.Name), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "picture", Description: "Draw a picture."}, func(context.Context, *sdk.CallToolRequest, any) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "here it is"},
			&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 12<<10)},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 300)},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "the notes"}},
			&sdk.ResourceLink{URI: "file:///big.bin", Name: "big.bin"},
		}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *sdk.CallToolRequest, any) (*sdk.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("it broke")
	})
	sdk.AddTool(s, &sdk.Tool{Name: "dotted.name", Description: "A name with a dot."}, func(context.Context, *sdk.CallToolRequest, any) (*sdk.CallToolResult, any, error) {
		return text("dotted ok"), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "wait", Description: "Waits until cancelled."}, func(ctx context.Context, _ *sdk.CallToolRequest, _ any) (*sdk.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	// A tool whose schema lacks "type": the SDK refuses to add one, so the
	// schema is swapped after adding, as a careless server would send it.
	loose := &sdk.Tool{Name: "loose", Description: "Schema without a type.", InputSchema: json.RawMessage(`{"type":"object"}`)}
	s.AddTool(loose, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("loose got " + string(req.Params.Arguments)), nil
	})
	loose.InputSchema = json.RawMessage(`{"properties":{"x":{"type":"string"}},"required":["x"]}`)
	if stdio {
		sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "The server's process id."}, func(context.Context, *sdk.CallToolRequest, any) (*sdk.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
		sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "An environment variable."}, func(_ context.Context, _ *sdk.CallToolRequest, in nameIn) (*sdk.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			if !ok {
				return text("<unset>"), nil, nil
			}
			return text(v), nil, nil
		})
		sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exits while answering."}, func(context.Context, *sdk.CallToolRequest, any) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "fatal: crashing on request")
			os.Exit(3)
			return nil, nil, nil
		})
	}
	return s
}
