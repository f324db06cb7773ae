package scripted_test

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
)

func ExampleReplies() {
	m := scripted.Replies(
		scripted.Call("read_file", `{"path":"go.mod"}`).WithText("Let me look."),
		scripted.Text("The module is example.com/x.").WithExpect(scripted.Expect{LastMessageRole: model.RoleTool}),
	)
	ctx := context.Background()

	resp, _ := m.Generate(ctx, &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Which module is this?"}}}, nil)
	fmt.Println(resp.Text, resp.ToolCalls[0].ID, resp.ToolCalls[0].Name, string(resp.ToolCalls[0].Arguments), resp.FinishReason)

	_, err := m.Generate(ctx, &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "Well?"}}}, nil)
	fmt.Println(err)
	fmt.Println(m.Remaining(), len(m.Requests()))
	// Output:
	// Let me look. call_1_0 read_file {"path":"go.mod"} tool_calls
	// script Replies step 2: expected last message role tool, got user
	// 0 2
}

func ExampleParse() {
	s, err := scripted.Parse("demo.json", []byte(`{"steps": [
		{"text": "Rate limited, retrying soon."},
		{"error": {"kind": "retryable", "status": 429, "message": "rate limited", "retry_after": "2s"}}
	]}`))
	if err != nil {
		panic(err)
	}
	m := scripted.New(s)
	ctx := context.Background()
	resp, _ := m.Generate(ctx, &model.Request{}, nil)
	fmt.Println(resp.Text)
	_, err = m.Generate(ctx, &model.Request{}, nil)
	fmt.Println(err)
	_, err = m.Generate(ctx, &model.Request{}, nil)
	fmt.Println(err)
	// Output:
	// Rate limited, retrying soon.
	// HTTP 429: rate limited
	// script demo.json: request 3 arrived but the script has 2 steps
}
