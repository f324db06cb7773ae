package ollama

import (
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/model"
	pt "github.com/agentloop/agentloop/model/internal/providertest"
)

// Images travel in a message's own "images" list as plain base64 (no data:
// prefix), on tool results as on user messages; the text stays in content.
func TestImagesInRequestBody(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: jsonHeader, Body: pt.Load(t, "chat_text.json")})
	c := newClient(srv, &pt.Sleeps{}, nil)
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: "What is on screen?", Images: []model.Image{{MIMEType: "image/png", Data: []byte{1, 2, 3}}}},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "shot", Arguments: json.RawMessage(`{}`)}}},
		{Role: model.RoleTool, ToolCallID: "call_1", Content: "[image: image/png, 3 B]", Images: []model.Image{{MIMEType: "image/png", Data: []byte{4, 5, 6}}, {MIMEType: "image/jpeg", Data: []byte{7}}}},
	}}
	if _, err := c.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"qwen3:8b","messages":[` +
		`{"role":"user","content":"What is on screen?","images":["AQID"]},` +
		`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"shot","arguments":{}}}]},` +
		`{"role":"tool","content":"[image: image/png, 3 B]","tool_name":"shot","images":["BAUG","Bw=="]}],` +
		`"stream":false}` + "\n"
	if got := string(srv.Request(0)); got != want {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
}
