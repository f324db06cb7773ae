package loop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// A picture a tool returns (an MCP server's screenshot) reaches the model
// with the tool's result, and again after the session is folded from its
// log: the image is part of the recorded result.
func TestToolImagesReachTheModel(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	shot := tool.Func(model.ToolSpec{Name: "screenshot", Description: "test tool", Parameters: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			return tool.Result{Output: "[image: image/png, 12 B]", Images: []model.Image{{MIMEType: "image/png", Data: png}}}, nil
		})
	e := newEnv()
	m := scripted.Replies(scripted.Call("screenshot", `{}`), scripted.Text("I see it."))
	st := run(t, e.runner(t, m, []tool.Tool{shot}, nil), "look")
	checkScript(t, m)
	msgs := toolMessages(m.Requests()[1])
	if len(msgs) != 1 || len(msgs[0].Images) != 1 || !bytes.Equal(msgs[0].Images[0].Data, png) || msgs[0].Images[0].MIMEType != "image/png" {
		t.Fatalf("the model's second request: tool messages %+v", msgs)
	}
	back := refold(t, e, st)
	for _, msg := range back.Conversation {
		if msg.Role == model.RoleTool && (len(msg.Images) != 1 || !bytes.Equal(msg.Images[0].Data, png)) {
			t.Fatalf("after folding the log, the tool message lost its image: %+v", msg)
		}
	}
}
