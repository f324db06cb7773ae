package loop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// Flash: one call, its reply is the answer — completed, no wrap-up call,
// whatever the configured limits say.
func TestSingleShotIsOneCall(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("Paris."))
	r := e.runner(t, m, nil, func(c *loop.Config) { c.Mode = loop.ModeSingleShot; c.Limits.MaxIterations = 15 })
	st := run(t, r, "capital of France?")
	checkScript(t, m)
	if st.Status != loop.StatusCompleted || st.Reason != loop.ReasonCompleted || st.Answer != "Paris." || st.Mode != loop.ModeSingleShot || st.MaxIterations != 1 || st.InteractionCount != 1 {
		t.Fatalf("%s (%s) %q mode %s max %d calls %d", st.Status, st.Reason, st.Answer, st.Mode, st.MaxIterations, st.InteractionCount)
	}
}

// A session can start from a caller's conversation; the model sees it
// whole, after the system prompt unless the conversation brings its own.
func TestSeededConversation(t *testing.T) {
	msgs := []model.Message{
		{Role: model.RoleUser, Content: "What is in a.txt?"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: []byte(`{"path":"a.txt"}`)}}},
		{Role: model.RoleTool, ToolCallID: "c1", ToolName: "read_file", Content: "hello"},
		{Role: model.RoleUser, Content: "And in upper case?"},
	}
	e := newEnv()
	m := scripted.Replies(scripted.Text("HELLO"))
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, func(c *loop.Config) { c.SystemPrompt = "be brief" })
	st, err := r.Run(t.Context(), loop.Task{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	checkScript(t, m)
	got := m.Requests()[0].Messages
	if st.Task != "And in upper case?" || len(got) != 5 || got[0].Content != "be brief" || got[3].Content != "hello" || st.Answer != "HELLO" {
		t.Fatalf("task %q, sent %+v", st.Task, got)
	}
	refold(t, e, st)

	// The caller's own system message replaces the configured prompt.
	e = newEnv()
	m = scripted.Replies(scripted.Text("ok"))
	r = e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, func(c *loop.Config) { c.SystemPrompt = "be brief" })
	if _, err := r.Run(t.Context(), loop.Task{Messages: []model.Message{{Role: model.RoleSystem, Content: "mine"}, {Role: model.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got := m.Requests()[0].Messages; len(got) != 2 || got[0].Content != "mine" {
		t.Fatalf("sent %+v", got)
	}

	for _, bad := range []struct {
		msgs []model.Message
		want string
	}{
		{[]model.Message{{Role: "robot", Content: "x"}}, "unknown role"},
		{[]model.Message{{Role: model.RoleUser, Content: "x"}, {Role: model.RoleTool, ToolCallID: "nope", Content: "y"}}, "no earlier assistant message made"},
		{[]model.Message{{Role: model.RoleUser, Content: "x"}, {Role: model.RoleAssistant, Content: "y"}}, "last message is from the assistant"},
	} {
		if _, err := r.Run(t.Context(), loop.Task{Messages: bad.msgs}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.msgs, err, bad.want)
		}
	}
}

// GOAL_COMPLETE or the completion marker end a tools-mode session with the
// text after it as the answer.
func TestMarkersEndToolsMode(t *testing.T) {
	for _, reply := range []string{"All done.\nGOAL_COMPLETE: the report is in out.md", "TASK_COMPLETE: the report is in out.md", "the report is in out.md\nGOAL_COMPLETE"} {
		e := newEnv()
		m := scripted.Replies(scripted.Text(reply))
		st := run(t, e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, nil), "write the report")
		if st.Status != loop.StatusCompleted || st.Mode != loop.ModeTools || !strings.HasSuffix(st.Answer, "the report is in out.md") || strings.Contains(st.Answer, "COMPLETE") {
			t.Errorf("%q: %s %q", reply, st.Status, st.Answer)
		}
	}
}

// iteration.started is durable (so watchers see it) when the model is
// called, not only with the reply.
func TestIterationStartedIsCommittedBeforeTheModelCall(t *testing.T) {
	e := newEnv()
	calls := 0
	m := model.Func(func(ctx context.Context, _ *model.Request, _ model.StreamFunc) (*model.Response, error) {
		calls++
		evs, _ := e.log.Load(ctx, "s1")
		last := evs[len(evs)-1]
		if d, ok := last.Data.(*loop.IterationStarted); !ok || d.N != calls {
			return nil, fmt.Errorf("call %d: the log ends with %s", calls, last.Type)
		}
		if calls == 1 {
			return &model.Response{ToolCalls: []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: []byte(`{"path":"a"}`)}}}, nil
		}
		return &model.Response{Text: "done"}, nil
	})
	st := run(t, e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, nil), "x")
	if st.Status != loop.StatusCompleted || calls != 2 {
		t.Fatalf("%s (%s) %s after %d calls", st.Status, st.Reason, st.Detail, calls)
	}
}
