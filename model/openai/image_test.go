package openai

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentloop/agentloop/model"
	pt "github.com/agentloop/agentloop/model/internal/providertest"
)

// pixel is a 1×1 PNG; its base64 is what the wire must carry.
var pixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

const pixelB64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"

// A tool result's images reach Chat Completions as image_url parts of one
// user message after the turn's tool results (the only role that may hold
// images), while each tool message keeps its text; a user's images go in
// its own message as content parts.
func TestImagesInRequestBody(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: jsonHeader, Body: pt.Load(t, "completion_text.json")})
	c := newClient(srv, &pt.Sleeps{}, nil)
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: "What is on screen?", Images: []model.Image{{MIMEType: "image/png", Data: pixel}}},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "call_1", Name: "shot", Arguments: json.RawMessage(`{}`)},
			{ID: "call_2", Name: "echo", Arguments: json.RawMessage(`{}`)},
			{ID: "call_3", Name: "shot", Arguments: json.RawMessage(`{}`)},
		}},
		{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "shot", Content: "[image: image/png, 33 B]", Images: []model.Image{{MIMEType: "image/png", Data: pixel}}},
		{Role: model.RoleTool, ToolCallID: "call_2", ToolName: "echo", Content: "hi"},
		{Role: model.RoleTool, ToolCallID: "call_3", ToolName: "shot", Content: "two", Images: []model.Image{{MIMEType: "image/png", Data: pixel}, {MIMEType: "image/jpeg", Data: []byte{1, 2, 3}}}},
	}}
	if _, err := c.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-4.1-mini","messages":[` +
		`{"role":"user","content":[{"type":"text","text":"What is on screen?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pixelB64 + `"}}]},` +
		`{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_1","type":"function","function":{"name":"shot","arguments":"{}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"echo","arguments":"{}"}},` +
		`{"id":"call_3","type":"function","function":{"name":"shot","arguments":"{}"}}]},` +
		`{"role":"tool","content":"[image: image/png, 33 B]","tool_call_id":"call_1"},` +
		`{"role":"tool","content":"hi","tool_call_id":"call_2"},` +
		`{"role":"tool","content":"two","tool_call_id":"call_3"},` +
		`{"role":"user","content":[` +
		`{"type":"text","text":"The images returned by tool call call_1 (shot):"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pixelB64 + `"}},` +
		`{"type":"text","text":"The images returned by tool call call_3 (shot):"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pixelB64 + `"}},` +
		`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AQID"}}]}]}` + "\n"
	if got := string(srv.Request(0)); got != want {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
	if n, body := requestSize(req), srv.Request(0); n < len(body) {
		t.Errorf("requestSize %d < encoded %d", n, len(body))
	}
}

// The fake server refuses what the real API refuses about images, so the
// test above means something.
func TestValidatorImages(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@"}}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"file:///x.png"}}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image","data":"x"}]}]}`,
		`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"x"}]}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AQID"}}],"tool_call_id":"c1"}]}`,
	} {
		r, _ := http.NewRequest("POST", "http://x/v1/chat/completions", nil)
		r.Header.Set("Authorization", "Bearer sk-test")
		r.Header.Set("Content-Type", "application/json")
		if validateRequest(r, []byte(body)) == "" {
			t.Errorf("accepted %s", body)
		}
	}
}
