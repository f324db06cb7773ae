package loop_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// bigTool returns n bytes of output.
func bigTool(n int) tool.Tool {
	return tool.Func(model.ToolSpec{Name: "dump", Parameters: objSchema}, func(context.Context, json.RawMessage) (tool.Result, error) {
		return tool.Result{Output: strings.Repeat("log line\n", n/9)}, nil
	})
}

// Near the context window the conversation is condensed — old tool output
// first, then a summary of the oldest turns — recorded as an event, so the
// fold rebuilds exactly what the model saw; the session goes on.
func TestConversationIsCondensedNearTheWindow(t *testing.T) {
	e := newEnv()
	var steps []scripted.Step
	for i := range 6 {
		steps = append(steps, scripted.Call("dump", `{"path":"`+strings.Repeat("x", i+1)+`"}`))
	}
	steps = append(steps, scripted.Text("done"))
	m := scripted.Replies(steps...)
	// Each result is ~4,000 bytes ≈ 1,000 tokens; the window holds ~3 of them.
	r := e.runner(t, m, []tool.Tool{bigTool(4000)}, func(c *loop.Config) { c.Limits.ContextTokens = 3000 })
	st := run(t, r, "collect the logs")
	checkScript(t, m)
	if st.Status != loop.StatusCompleted {
		t.Fatalf("%s (%s) %s", st.Status, st.Reason, st.Detail)
	}
	evs, _ := e.log.Load(t.Context(), st.ID)
	condensations := 0
	for _, ev := range evs {
		if c, ok := ev.Data.(*loop.ConversationCondensed); ok {
			condensations++
			if c.TokensAfter >= c.TokensBefore {
				t.Fatalf("a condensation that freed nothing: %+v", c)
			}
		}
	}
	if condensations == 0 {
		t.Fatal("never condensed")
	}
	last := m.Requests()[len(m.Requests())-1]
	size := 0
	for _, msg := range last.Messages {
		size += len(msg.Content)
	}
	if size > 3000*4 || last.Messages[0].Content != "collect the logs" {
		t.Fatalf("last request: %d bytes, first message %q (the task must stay)", size, last.Messages[0].Content)
	}
	stubbed := false
	for _, msg := range last.Messages {
		stubbed = stubbed || strings.Contains(msg.Content, "removed to save context") || strings.Contains(msg.Content, "Summary of earlier steps")
	}
	if !stubbed {
		t.Fatal("no stub or summary in the last request")
	}
	refold(t, e, st)
}

// When even a condensed conversation cannot fit, the session ends with a
// clear reason instead of looping.
func TestContextExhaustedEnds(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("unreachable"))
	r := e.runner(t, m, []tool.Tool{bigTool(10)}, func(c *loop.Config) { c.Limits.ContextTokens = 100 })
	st := run(t, r, strings.Repeat("a very long task ", 200))
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonContextExhausted || !strings.Contains(st.Detail, "context window") {
		t.Fatalf("%s (%s) %s", st.Status, st.Reason, st.Detail)
	}
	if len(m.Requests()) != 0 {
		t.Fatal("the model was called with a conversation that cannot fit")
	}
}
