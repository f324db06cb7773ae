package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

func TestToolLoopToFinalAnswer(t *testing.T) {
	e := newEnv()
	rec := &recorder{}
	m := scripted.Replies(
		scripted.Call("read_file", `{"path":"a.go"}`).WithUsage(model.Usage{InputTokens: 100, OutputTokens: 10}),
		scripted.Text("done: a.go is fine").WithUsage(model.Usage{InputTokens: 150, OutputTokens: 5}),
	)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", rec)}, func(c *loop.Config) {
		c.SystemPrompt = "You are a test agent."
		c.Price = func(string, model.Usage) (float64, bool) { return 0.01, true }
	})
	st := run(t, r, "check a.go")
	checkScript(t, m)

	if st.Status != loop.StatusCompleted || st.Reason != loop.ReasonCompleted || st.Answer != "done: a.go is fine" {
		t.Fatalf("status %s reason %s answer %q", st.Status, st.Reason, st.Answer)
	}
	if got := rec.list(); !slices.Equal(got, []string{"read_file:a.go"}) {
		t.Fatalf("tool calls %v", got)
	}
	if st.InteractionCount != 2 || st.CurrentIteration != 2 || len(st.Iterations) != 2 {
		t.Fatalf("interactions %d iteration %d iterations %d", st.InteractionCount, st.CurrentIteration, len(st.Iterations))
	}
	if st.Usage.InputTokens != 250 || st.Usage.OutputTokens != 15 || st.CostUSD != 0.02 {
		t.Fatalf("usage %+v cost %v", st.Usage, st.CostUSD)
	}
	it := st.Iterations[0]
	if it.Status != loop.IterationCompleted || len(it.ToolCalls) != 1 || it.ToolCalls[0].Status != loop.ToolSuccess || it.ToolCalls[0].Output != "read_file a.go" {
		t.Fatalf("iteration 1: %+v", it)
	}
	if st.LastInteractionAt.IsZero() || st.CompletedAt.IsZero() || st.Duration <= 0 {
		t.Fatalf("timestamps: %+v", st)
	}
	// The second request carries the system prompt, the task, the call and its result.
	req := m.Requests()[1]
	if req.Messages[0].Role != model.RoleSystem || req.Messages[1].Content != "check a.go" {
		t.Fatalf("messages %+v", req.Messages)
	}
	tm := toolMessages(req)
	if len(tm) != 1 || tm[0].Content != "read_file a.go" || tm[0].ToolCallID == "" {
		t.Fatalf("tool messages %+v", tm)
	}
	want := []string{"session.started", "iteration.started", "model.responded", "tool.started", "tool.finished", "iteration.ended",
		"iteration.started", "model.responded", "iteration.ended", "session.ended"}
	if got := e.log.types(st.ID); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	refold(t, e, st)
}

func TestSingleShot(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("Paris"))
	r := e.runner(t, m, nil, func(c *loop.Config) { c.Limits.MaxIterations = 1 })
	st := run(t, r, "capital of France?")
	checkScript(t, m)
	if st.Status != loop.StatusCompleted || st.Answer != "Paris" || st.InteractionCount != 1 {
		t.Fatalf("%s %q %d", st.Status, st.Answer, st.InteractionCount)
	}
	if strings.Contains(lastUserContent(m.Requests()[0]), "IMPORTANT") {
		t.Fatal("single-shot must not carry a last-iteration warning")
	}
}

func TestSelfReasoningMarker(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Text("Let me think about the factors."),
		scripted.Text("Building on that, 6 times 7..."),
		scripted.Text("Therefore TASK_COMPLETE: 42"),
	)
	r := e.runner(t, m, nil, func(c *loop.Config) { c.Limits.MaxIterations = 5 })
	st := run(t, r, "what is 6*7?")
	checkScript(t, m)
	if st.Mode != loop.ModeSelfReasoning || st.Status != loop.StatusCompleted || st.Answer != "42" || st.InteractionCount != 3 {
		t.Fatalf("mode %s status %s answer %q interactions %d", st.Mode, st.Status, st.Answer, st.InteractionCount)
	}
	// Conversation continuity: the third request holds both earlier replies.
	req := m.Requests()[2]
	var assistant []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleAssistant {
			assistant = append(assistant, msg.Content)
		}
	}
	if len(assistant) != 2 || !strings.Contains(lastUserContent(req), "TASK_COMPLETE:") {
		t.Fatalf("request 3: %+v", req.Messages)
	}
}

func TestCustomMarker(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("hmm"), scripted.Text("FINAL>> yes"))
	r := e.runner(t, m, nil, func(c *loop.Config) { c.Marker = "FINAL>>"; c.Limits.MaxIterations = 3 })
	st := run(t, r, "q")
	if st.Answer != "yes" {
		t.Fatalf("answer %q", st.Answer)
	}
}

func TestLastIterationWarningAndWrapUp(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Call("read_file", `{"path":"1"}`),
		scripted.Call("read_file", `{"path":"2"}`),
		scripted.Call("read_file", `{"path":"3"}`),
		scripted.Text("partial: read 1-3"),
	)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) { c.Limits.MaxIterations = 3 })
	st := run(t, r, "read everything")
	checkScript(t, m)
	reqs := m.Requests()
	if got := lastUserContent(reqs[2]); !strings.Contains(got, "iteration 3 of 3") {
		t.Fatalf("last call carries no warning: %q", got)
	}
	if strings.Contains(lastUserContent(reqs[1]), "iteration") {
		t.Fatal("warning sent too early")
	}
	wrap := reqs[3]
	if len(wrap.Tools) != 0 || !strings.Contains(lastUserContent(wrap), "max_iterations") {
		t.Fatalf("wrap-up request: tools %d, %q", len(wrap.Tools), lastUserContent(wrap))
	}
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonMaxIterations || st.Answer != "partial: read 1-3" || !st.Partial {
		t.Fatalf("status %s reason %s answer %q partial %v", st.Status, st.Reason, st.Answer, st.Partial)
	}
	refold(t, e, st)
}

func TestWrapUpDisabledKeepsLastText(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("read_file", `{"path":"1"}`).WithText("looking at 1"))
	off := false
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) { c.Limits.MaxIterations = 1; c.Limits.WrapUp = &off })
	st := run(t, r, "x")
	checkScript(t, m)
	if st.Reason != loop.ReasonMaxIterations || st.Answer != "looking at 1" {
		t.Fatalf("%s %q", st.Reason, st.Answer)
	}
}

func TestBadToolCallsGoBackToTheModel(t *testing.T) {
	e := newEnv()
	bad := []string{`nope|{}`, `read_file|{"path": 7}`, `read_file|{"wrong":"x"}`, `read_file|not json`, `read_file|{"path":"fail.txt"}`}
	wants := []string{`unknown tool "nope": available tools are read_file`, "argument path", "additional", "not valid JSON: not json", "cannot open fail.txt"}
	var steps []scripted.Step
	for i, b := range bad {
		name, args, _ := strings.Cut(b, "|")
		// A good call between bad ones keeps stuck detection out of this test.
		steps = append(steps, scripted.Call(name, args), scripted.Call("read_file", fmt.Sprintf(`{"path":"ok%d"}`, i)))
	}
	steps = append(steps, scripted.Text("gave up"))
	m := scripted.Replies(steps...)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) { c.Limits.MaxIterations = 20 })
	st := run(t, r, "x")
	checkScript(t, m)
	if st.Status != loop.StatusCompleted {
		t.Fatalf("status %s %s", st.Status, st.Detail)
	}
	for i, want := range wants {
		tm := toolMessages(m.Requests()[2*i+1])
		got := tm[len(tm)-1]
		if !got.IsError || !strings.Contains(got.Content, want) {
			t.Errorf("call %d: got %q (error %v), want it to mention %q", i+1, got.Content, got.IsError, want)
		}
	}
}

func TestPerTurnCapAndToolBudget(t *testing.T) {
	e := newEnv()
	rec := &recorder{}
	m := scripted.Replies(
		scripted.Calls(scripted.Call("read_file", `{"path":"1"}`), scripted.Call("read_file", `{"path":"2"}`), scripted.Call("read_file", `{"path":"3"}`)),
		scripted.Calls(scripted.Call("read_file", `{"path":"4"}`), scripted.Call("read_file", `{"path":"5"}`)),
		scripted.Text("final"),
	)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", rec)}, func(c *loop.Config) {
		c.Limits.MaxToolCallsPerTurn = 2
		c.Limits.BudgetToolCalls = 3
	})
	st := run(t, r, "x")
	if got := rec.list(); !slices.Equal(got, []string{"read_file:1", "read_file:2", "read_file:4"}) {
		t.Fatalf("ran %v", got)
	}
	tm := toolMessages(m.Requests()[1])
	if !strings.Contains(tm[2].Content, "at most 2 run per turn") {
		t.Fatalf("excess call: %q", tm[2].Content)
	}
	// The budget is spent after call 4; call 5 is refused and the session ends before another model call.
	if st.Reason != loop.ReasonBudgetToolCalls || st.ToolCallCount != 3 {
		t.Fatalf("reason %s tool calls %d", st.Reason, st.ToolCallCount)
	}
}

func TestTokenBudgetCheckedBeforeSpending(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Call("read_file", `{"path":"1"}`).WithUsage(model.Usage{InputTokens: 700, OutputTokens: 100}),
		scripted.Call("read_file", `{"path":"2"}`).WithUsage(model.Usage{InputTokens: 800, OutputTokens: 100}),
	)
	off := false
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) {
		c.Limits.BudgetTokens = 1000
		c.Limits.MaxOutputTokens = 150
		c.Limits.WrapUp = &off
	})
	st := run(t, r, "x")
	if m.Remaining() != 1 {
		t.Fatalf("the second call would pass the budget but was made (%d steps left)", m.Remaining())
	}
	if st.Reason != loop.ReasonBudgetTokens || st.InteractionCount != 1 {
		t.Fatalf("reason %s interactions %d", st.Reason, st.InteractionCount)
	}
	_ = m
}

func TestBudgetWarnings(t *testing.T) {
	e := newEnv()
	var steps []scripted.Step
	for i := range 8 {
		steps = append(steps, scripted.Call("read_file", fmt.Sprintf(`{"path":"%d"}`, i)).WithUsage(model.Usage{InputTokens: 900, OutputTokens: 100}))
	}
	steps = append(steps, scripted.Text("ok").WithUsage(model.Usage{InputTokens: 900, OutputTokens: 100}))
	m := scripted.Replies(steps...)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) {
		c.Limits.BudgetTokens = 10000
		c.Limits.MaxOutputTokens = 100
	})
	st := run(t, r, "x")
	checkScript(t, m)
	reqs := m.Requests()
	if got := lastUserContent(reqs[8]); !strings.Contains(got, "80% of the token budget") {
		t.Fatalf("no 80%% warning before call 9: %q", got)
	}
	if got := lastUserContent(reqs[7]); strings.Contains(got, "budget") {
		t.Fatalf("warning too early: %q", got)
	}
	if st.Status != loop.StatusCompleted {
		t.Fatalf("%s %s", st.Status, st.Detail)
	}
}

func TestCostBudget(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("read_file", `{"path":"1"}`), scripted.Call("read_file", `{"path":"2"}`))
	off := false
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) {
		c.Limits.BudgetUSD = 0.15
		c.Limits.WrapUp = &off
		c.Price = func(string, model.Usage) (float64, bool) { return 0.1, true }
	})
	st := run(t, r, "x")
	if st.Reason != loop.ReasonBudgetCost || st.InteractionCount != 1 {
		t.Fatalf("reason %s interactions %d", st.Reason, st.InteractionCount)
	}
}

// The first call is priced before it is sent, from its input and the
// output it asks for at most: one the budget cannot cover is never made.
func TestCostBudgetGatesTheFirstCall(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("too dear"))
	perMTok := func(_ string, u model.Usage) (float64, bool) {
		return (float64(u.InputTokens)*2 + float64(u.OutputTokens)*8) / 1e6, true
	}
	r := e.runner(t, m, nil, func(c *loop.Config) {
		c.Limits.BudgetUSD = 0.0001
		c.Price = perMTok
	})
	st := run(t, r, "x")
	if len(m.Requests()) != 0 || st.InteractionCount != 0 {
		t.Fatalf("%d calls made", len(m.Requests()))
	}
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonBudgetCost || !strings.Contains(st.Detail, "spent $0 of $0.0001") {
		t.Fatalf("%s %s: %s", st.Status, st.Reason, st.Detail)
	}
}

// Under a budget every call asks for at most the output cap, so its cost
// is bounded before it is sent; the token budget counts the cap too.
func TestBudgetCapsEachCallsOutput(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("read_file", `{"path":"1"}`).WithUsage(model.Usage{InputTokens: 100, OutputTokens: 100}), scripted.Text("never"))
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) {
		c.Limits.BudgetTokens = loop.DefaultMaxOutputTokens + 200
	})
	st := run(t, r, "x")
	reqs := m.Requests()
	if len(reqs) != 1 || reqs[0].MaxTokens != loop.DefaultMaxOutputTokens {
		t.Fatalf("%d calls, max tokens %d", len(reqs), reqs[0].MaxTokens)
	}
	if st.Reason != loop.ReasonBudgetTokens || !strings.Contains(st.Detail, "used 200 of 4296 tokens") {
		t.Fatalf("%s: %s", st.Reason, st.Detail)
	}
}

func TestSessionTimeout(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("read_file", `{"path":"1"}`), scripted.Text("late answer"))
	slow := tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		e.clock.Advance(time.Hour)
		return tool.Result{Output: "slow"}, nil
	})
	r := e.runner(t, m, []tool.Tool{slow}, func(c *loop.Config) { c.Limits.Timeout = loop.Duration(30 * time.Minute) })
	st := run(t, r, "x")
	checkScript(t, m) // the wrap-up call takes the last step
	if st.Reason != loop.ReasonTimeout || st.Answer != "late answer" {
		t.Fatalf("reason %s answer %q", st.Reason, st.Answer)
	}
}

// A model call that times out is made once more; a second timeout in a
// row pauses the session, and resuming makes the call again.
func TestModelCallTimeoutRetriesOnceThenPauses(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("too slow").WithDelay(time.Hour), scripted.Text("quick"))
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, func(c *loop.Config) {
		c.Limits.ModelCallTimeout = loop.Duration(20 * time.Millisecond)
	})
	st := run(t, r, "x")
	if st.Status != loop.StatusCompleted || st.Answer != "quick" || len(st.Iterations) != 1 || len(st.Warnings) != 1 {
		t.Fatalf("%s %q iterations %d warnings %+v", st.Status, st.Answer, len(st.Iterations), st.Warnings)
	}

	e = newEnv()
	m = scripted.Replies(scripted.Text("slow").WithDelay(time.Hour), scripted.Text("slow again").WithDelay(time.Hour), scripted.Text("back"))
	r = e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, func(c *loop.Config) {
		c.Limits.ModelCallTimeout = loop.Duration(20 * time.Millisecond)
	})
	st = run(t, r, "x")
	if st.Status != loop.StatusPaused || st.Reason != loop.ReasonModelTimeout || !strings.Contains(st.Detail, "--model-timeout") {
		t.Fatalf("%s (%s) %q", st.Status, st.Reason, st.Detail)
	}
	refold(t, e, st)
	s, err := r.Resume(t.Context(), st.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if st, err = s.Wait(t.Context()); err != nil || st.Status != loop.StatusCompleted || st.Answer != "back" {
		t.Fatalf("after resume: %v %s %q", err, st.Status, st.Answer)
	}
	checkScript(t, m)
}

func TestNoProgress(t *testing.T) {
	e := newEnv()
	var steps []scripted.Step
	for i := 0; i < 10; i++ {
		steps = append(steps, scripted.Call("read_file", `{"path":"`+string(rune('a'+i))+`"}`))
	}
	m := scripted.Replies(steps...)
	writer := tool.Func(model.ToolSpec{Name: "write_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		tool.ReportModification(ctx, tool.Modification{Path: "x", Kind: tool.Changed})
		return tool.Result{Output: "ok"}, nil
	})
	off := false
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil), writer}, func(c *loop.Config) {
		c.Limits.NoProgressAfter = 5
		c.Limits.WrapUp = &off
	})
	st := run(t, r, "x")
	if st.Reason != loop.ReasonNoProgress || st.CurrentIteration != 5 {
		t.Fatalf("reason %s at iteration %d", st.Reason, st.CurrentIteration)
	}
}

func TestModificationsAreRecorded(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("write_file", `{"path":"x"}`), scripted.Text("done"))
	writer := tool.Func(model.ToolSpec{Name: "write_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		tool.ReportModification(ctx, tool.Modification{Path: "x", Kind: tool.Created})
		return tool.Result{Output: "ok"}, nil
	})
	r := e.runner(t, m, []tool.Tool{writer}, nil)
	st := run(t, r, "x")
	if len(st.Modified) != 1 || st.Modified[0].Path != "x" || st.LastModifiedIteration != 1 {
		t.Fatalf("modified %+v at %d", st.Modified, st.LastModifiedIteration)
	}
	refold(t, e, st)
}

// A tool call's context ends with the call, while its reporter lives for
// the session's calls: a report a tool makes after its call returned
// (from a goroutine it left behind) counts for the call running when it
// is made, and is dropped when none runs.
func TestLateModificationReportCountsWhenItIsMade(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("write_file", `{"path":"x"}`), scripted.Call("read_file", `{"path":"x"}`), scripted.Text("done"))
	var late context.Context
	writer := tool.Func(model.ToolSpec{Name: "write_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		tool.ReportModification(ctx, tool.Modification{Path: "x", Kind: tool.Created})
		late = ctx
		return tool.Result{Output: "ok"}, nil
	})
	var lateErr error
	reader := tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		// The write's context ended with its call; its reporter still
		// takes a report, made now.
		lateErr = late.Err()
		tool.ReportModification(late, tool.Modification{Path: "y", Kind: tool.Created})
		return tool.Result{Output: "x"}, nil
	})
	r := e.runner(t, m, []tool.Tool{writer, reader}, nil)
	st := run(t, r, "x")
	tool.ReportModification(late, tool.Modification{Path: "z", Kind: tool.Created}) // no call runs
	if len(st.Modified) != 2 || st.Modified[0].Path != "x" || st.Modified[1].Path != "y" || st.LastModifiedIteration != 2 {
		t.Fatalf("modified %+v at %d, want x then y, at 2", st.Modified, st.LastModifiedIteration)
	}
	if lateErr == nil {
		t.Fatal("a tool call's context outlived the call")
	}
	refold(t, e, st)
}

func TestFatalModelErrorEndsWithError(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Fail(errors.New("openai: HTTP 401 from http://x (model m): bad key")))
	r := e.runner(t, m, nil, nil)
	st := run(t, r, "x")
	if st.Status != loop.StatusError || !strings.Contains(st.Detail, "HTTP 401") {
		t.Fatalf("%s %q", st.Status, st.Detail)
	}
}

func TestRetryableErrorPausesThenResumes(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Fail(&model.RetryableError{Err: errors.New("HTTP 429 rate limited")}),
		scripted.Text("answer after resume"),
	)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, nil)
	st := run(t, r, "x")
	if st.Status != loop.StatusPaused || st.Reason != loop.ReasonModelError || !strings.Contains(st.Detail, "429") {
		t.Fatalf("%s %s %q", st.Status, st.Reason, st.Detail)
	}
	s, err := r.Resume(t.Context(), st.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err = s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checkScript(t, m)
	// The same iteration is redone: no step lost, none duplicated.
	if st.Status != loop.StatusCompleted || st.CurrentIteration != 1 || st.InteractionCount != 2 {
		t.Fatalf("%s iteration %d interactions %d", st.Status, st.CurrentIteration, st.InteractionCount)
	}
	refold(t, e, st)
}

func TestUnknownEventVersionFailsLoudly(t *testing.T) {
	_, err := loop.DecodeEvent("s", 1, loop.TypeSessionStarted, 2, time.Now(), []byte(`{}`))
	if !errors.Is(err, loop.ErrFutureVersion) || !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("future version: %v", err)
	}
	_, err = loop.DecodeEvent("s", 1, "session.teleported", 1, time.Now(), []byte(`{}`))
	if !errors.Is(err, loop.ErrUnknownEvent) {
		t.Fatalf("unknown type: %v", err)
	}
	_, err = loop.DecodeEvent("s", 1, loop.TypeSessionStarted, 1, time.Now(), []byte(`{"task":`))
	if err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt: %v", err)
	}
}

func TestFoldRejectsGapsAndRepeats(t *testing.T) {
	at := time.Now()
	e1 := loop.NewEvent("s", 1, at, &loop.SessionStarted{Task: "x"})
	e3 := loop.NewEvent("s", 3, at, &loop.IterationStarted{N: 1})
	if _, err := loop.Fold([]loop.Event{e1, e3}); err == nil {
		t.Fatal("gap accepted")
	}
	if _, err := loop.Fold([]loop.Event{e1, e1}); err == nil {
		t.Fatal("repeat accepted")
	}
}

func TestEmptyTaskAndMissingConfig(t *testing.T) {
	if _, err := loop.New(loop.Config{}); err == nil {
		t.Fatal("no model accepted")
	}
	e := newEnv()
	r := e.runner(t, scripted.Replies(), nil, nil)
	if _, err := r.Start(t.Context(), loop.Task{}); err == nil {
		t.Fatal("empty task accepted")
	}
}

// A provider's crude guess of usage is replaced by the runner's estimator;
// real usage is kept.
func TestEstimatedUsageIsRecounted(t *testing.T) {
	e := newEnv()
	replies := []*model.Response{
		{Text: "", ToolCalls: []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: []byte(`{"path":"a"}`)}}, Usage: model.Usage{InputTokens: 1, OutputTokens: 1}, UsageEstimated: true},
		{Text: "done", Usage: model.Usage{InputTokens: 100, OutputTokens: 5}},
	}
	n := 0
	m := model.Func(func(context.Context, *model.Request, model.StreamFunc) (*model.Response, error) {
		r := replies[n]
		n++
		return r, nil
	})
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) {
		c.EstimateUsage = func(*model.Request, *model.Response) model.Usage { return model.Usage{InputTokens: 7, OutputTokens: 9} }
	})
	st := run(t, r, "x")
	if st.Usage.InputTokens != 107 || st.Usage.OutputTokens != 14 {
		t.Fatalf("usage %+v", st.Usage)
	}
}

// The wrap-up call after the session's time limit is bounded too: a model
// that never answers holds the end back by the grace (5 s at least, a tenth
// of the limit), not by the 2-minute model call default.
func TestWrapUpAfterTimeoutIsBounded(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("read_file", `{"path":"1"}`), scripted.Text("never").WithDelay(time.Hour))
	slow := tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		e.clock.Advance(time.Hour)
		return tool.Result{Output: "slow"}, nil
	})
	r := e.runner(t, m, []tool.Tool{slow}, func(c *loop.Config) { c.Limits.Timeout = loop.Duration(3 * time.Second) })
	start := time.Now()
	st := run(t, r, "x")
	if st.Reason != loop.ReasonTimeout || time.Since(start) > time.Minute {
		t.Fatalf("reason %s after %s", st.Reason, time.Since(start))
	}
	if len(st.Warnings) == 0 || st.Warnings[len(st.Warnings)-1].Code != "wrap_up_failed" {
		t.Fatalf("warnings %+v", st.Warnings)
	}
}

// silentModel returns neither a reply nor an error on its first call, then
// answers.
type silentModel struct{ calls int }

func (m *silentModel) Generate(context.Context, *model.Request, model.StreamFunc) (*model.Response, error) {
	m.calls++
	if m.calls == 1 {
		return nil, nil
	}
	return &model.Response{Text: "done", FinishReason: model.FinishStop}, nil
}

// A model call that returns no reply and no error is recorded as an
// unreadable reply, not taken for an empty answer (generateFailed).
func TestModelWithNoReplyAndNoError(t *testing.T) {
	e := newEnv()
	st := run(t, e.runner(t, &silentModel{}, nil, nil), "answer")
	evs, err := e.log.Load(t.Context(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if f, ok := ev.Data.(*loop.ModelFailed); ok {
			if !f.Malformed || !strings.Contains(f.Error, "the model returned no reply and no error") {
				t.Fatalf("model.failed %+v", f)
			}
			return
		}
	}
	t.Fatalf("no model.failed recorded: %v", e.log.types(st.ID))
}
