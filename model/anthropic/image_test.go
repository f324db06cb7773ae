package anthropic

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

// A tool result's images go inside its tool_result block, after its text,
// as base64 image blocks; a result without images keeps its plain string
// content; a user's images follow its text.
func TestImagesInRequestBody(t *testing.T) {
	srv := pt.New(t, validateRequest, errorBody, pt.Reply{Header: jsonHeader, Body: pt.Load(t, "message_text.json")})
	c := newClient(srv, &pt.Sleeps{}, nil)
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: "What is on screen?", Images: []model.Image{{MIMEType: "image/png", Data: pixel}}},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "toolu_1", Name: "shot", Arguments: json.RawMessage(`{}`)},
			{ID: "toolu_2", Name: "echo", Arguments: json.RawMessage(`{}`)},
			{ID: "toolu_3", Name: "shot", Arguments: json.RawMessage(`{}`)},
		}},
		{Role: model.RoleTool, ToolCallID: "toolu_1", Content: "[image: image/png, 33 B]", Images: []model.Image{{MIMEType: "image/png", Data: pixel}}},
		{Role: model.RoleTool, ToolCallID: "toolu_2", Content: "hi"},
		{Role: model.RoleTool, ToolCallID: "toolu_3", Images: []model.Image{{MIMEType: "image/jpeg", Data: []byte{1, 2, 3}}}},
	}}
	if _, err := c.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"What is on screen?"},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + pixelB64 + `"}}]},` +
		`{"role":"assistant","content":[` +
		`{"type":"tool_use","id":"toolu_1","name":"shot","input":{}},` +
		`{"type":"tool_use","id":"toolu_2","name":"echo","input":{}},` +
		`{"type":"tool_use","id":"toolu_3","name":"shot","input":{}}]},` +
		`{"role":"user","content":[` +
		`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"[image: image/png, 33 B]"},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + pixelB64 + `"}}]},` +
		`{"type":"tool_result","tool_use_id":"toolu_2","content":"hi"},` +
		`{"type":"tool_result","tool_use_id":"toolu_3","content":[` +
		`{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AQID"}}]}]}]}` + "\n"
	if got := string(srv.Request(0)); got != want {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
}

// The fake server refuses what the real API refuses about images.
func TestValidatorImages(t *testing.T) {
	call := `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},`
	for _, body := range []string{
		`{"model":"m","max_tokens":9,"messages":[` + call + `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"AQID"}}]}]}]}`,
		`{"model":"m","max_tokens":9,"messages":[` + call + `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"url","media_type":"image/png","data":"AQID"}}]}]}]}`,
		`{"model":"m","max_tokens":9,"messages":[` + call + `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image_url","url":"x"}]}]}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AQID"}}]}]}`,
	} {
		r, _ := http.NewRequest("POST", "http://x/v1/messages", nil)
		r.Header.Set("x-api-key", "sk-ant-test")
		r.Header.Set("anthropic-version", "2023-06-01")
		r.Header.Set("Content-Type", "application/json")
		if p := validateRequest(r, []byte(body)); p == "" {
			t.Errorf("accepted %s", body)
		}
	}
}
