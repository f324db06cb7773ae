package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// blockingTool waits until its context ends, and says it started.
func blockingTool(name string, started chan<- struct{}) tool.Tool {
	return tool.Func(model.ToolSpec{Name: name, Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
}

func TestTerminateCancelsInFlightModelCall(t *testing.T) {
	e := newEnv()
	entered := make(chan struct{})
	m := model.Func(func(ctx context.Context, _ *model.Request, _ model.StreamFunc) (*model.Response, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	r := e.runner(t, m, nil, nil)
	s, err := r.Start(t.Context(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	s.Terminate("different_approach")
	st, err := s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusTerminated || st.Reason != loop.ReasonDifferentApproach || st.Detail != "different_approach" {
		t.Fatalf("%s %s %q", st.Status, st.Reason, st.Detail)
	}
	if st.Iterations[0].Status != loop.IterationFailed {
		t.Fatalf("open iteration left %s", st.Iterations[0].Status)
	}
	refold(t, e, st)
}

func TestTerminateCancelsInFlightTool(t *testing.T) {
	e := newEnv()
	started := make(chan struct{}, 1)
	m := scripted.Replies(scripted.Calls(scripted.Call("block", `{"path":"a"}`), scripted.Call("block", `{"path":"b"}`)))
	r := e.runner(t, m, []tool.Tool{blockingTool("block", started)}, nil)
	s, err := r.Start(t.Context(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	st, err := r.Terminate(t.Context(), s.ID(), "completed_by_user")
	if err != nil {
		t.Fatal(err)
	}
	calls := st.Iterations[0].ToolCalls
	if st.Status != loop.StatusCompleted || st.Reason != loop.ReasonCompletedByUser || len(calls) != 2 || !strings.Contains(calls[0].Output, "terminated") || !strings.Contains(calls[1].Output, "not run") {
		t.Fatalf("%s %+v", st.Status, calls)
	}
	if len(st.OpenToolCalls) != 0 || len(st.PendingCalls) != 0 {
		t.Fatalf("calls left open: %+v %+v", st.OpenToolCalls, st.PendingCalls)
	}
	refold(t, e, st)
}

func TestPauseAtSafePointThenResume(t *testing.T) {
	e := newEnv()
	var sess atomic.Pointer[loop.Session]
	ready := make(chan struct{})
	pauser := tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		<-ready
		sess.Load().Pause("lunch")
		return tool.Result{Output: "ok"}, nil
	})
	m := scripted.Replies(scripted.Call("read_file", `{"path":"a"}`), scripted.Text("done"))
	r := e.runner(t, m, []tool.Tool{pauser}, nil)
	s, err := r.Start(t.Context(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	sess.Store(s)
	close(ready)
	st, err := s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The pause waited for the iteration to finish.
	if st.Status != loop.StatusPaused || st.Reason != loop.ReasonUser || st.Detail != "lunch" || st.Iterations[0].Status != loop.IterationCompleted {
		t.Fatalf("%s %s %q %s", st.Status, st.Reason, st.Detail, st.Iterations[0].Status)
	}
	if _, err := r.Reply(t.Context(), st.ID, ""); err == nil {
		t.Fatal("empty reply accepted")
	}
	s, err = r.Resume(t.Context(), st.ID, "back")
	if err != nil {
		t.Fatal(err)
	}
	st, _ = s.Wait(t.Context())
	checkScript(t, m)
	if st.Status != loop.StatusCompleted || st.Answer != "done" {
		t.Fatalf("%s %q", st.Status, st.Answer)
	}
	if _, err := r.Resume(t.Context(), st.ID, ""); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("resume of an ended session: %v", err)
	}
	refold(t, e, st)
}

func TestInterruptPausesAndRedoesTheIteration(t *testing.T) {
	e := newEnv()
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	m := model.Func(func(c context.Context, _ *model.Request, _ model.StreamFunc) (*model.Response, error) {
		calls++
		if calls == 1 {
			cancel() // Ctrl-C while the model thinks
			<-c.Done()
			return nil, c.Err()
		}
		return &model.Response{Text: "answer"}, nil
	})
	r := e.runner(t, m, nil, func(c *loop.Config) { c.Limits.MaxIterations = 1 })
	s, err := r.Start(ctx, loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	st, _ := s.Wait(t.Context())
	if st.Status != loop.StatusPaused || st.Reason != loop.ReasonInterrupted {
		t.Fatalf("%s %s", st.Status, st.Reason)
	}
	s, err = r.Resume(t.Context(), st.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	st, _ = s.Wait(t.Context())
	if st.Status != loop.StatusCompleted || st.CurrentIteration != 1 || st.Answer != "answer" {
		t.Fatalf("%s iteration %d %q", st.Status, st.CurrentIteration, st.Answer)
	}
}

func TestReplyToWaitingSession(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Call("read_file", `{"path":"x"}`), scripted.Call("read_file", `{"path":"x"}`), scripted.Call("read_file", `{"path":"x"}`),
		scripted.Call("read_file", `{"path":"x"}`), scripted.Call("read_file", `{"path":"x"}`),
		scripted.Text("ok, trying y").WithExpect(scripted.Expect{LastMessageRole: model.RoleUser, LastMessageContains: "try y"}),
	)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, nil)
	st := run(t, r, "x")
	if st.Status != loop.StatusWaiting || st.Reason != loop.ReasonStuck {
		t.Fatalf("%s %s", st.Status, st.Reason)
	}
	s, err := r.Reply(t.Context(), st.ID, "try y instead")
	if err != nil {
		t.Fatal(err)
	}
	st, _ = s.Wait(t.Context())
	checkScript(t, m)
	if st.Status != loop.StatusCompleted {
		t.Fatalf("%s", st.Status)
	}
}

func TestTerminateStoredSession(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Fail(&model.RetryableError{Err: context.DeadlineExceeded}))
	r := e.runner(t, m, nil, nil)
	st := run(t, r, "x")
	if st.Status != loop.StatusPaused {
		t.Fatal(st.Status)
	}
	st, err := r.Terminate(t.Context(), st.ID, "failed")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonFailedByUser || st.Detail != "failed" {
		t.Fatalf("%s %q", st.Status, st.Detail)
	}
	refold(t, e, st)
}

func TestRecoveryOfInterruptedToolCalls(t *testing.T) {
	for _, c := range []struct {
		name       string
		idempotent bool
		build      func(model.ToolSpec, func(context.Context, json.RawMessage) (tool.Result, error)) tool.Tool
	}{
		{"idempotent", true, func(s model.ToolSpec, fn func(context.Context, json.RawMessage) (tool.Result, error)) tool.Tool {
			return idem{tool.Func(s, fn)}
		}},
		{"Func marked idempotent", true, func(s model.ToolSpec, fn func(context.Context, json.RawMessage) (tool.Result, error)) tool.Tool {
			return tool.Func(s, fn, tool.MarkIdempotent())
		}},
		{"not idempotent", false, func(s model.ToolSpec, fn func(context.Context, json.RawMessage) (tool.Result, error)) tool.Tool {
			return tool.Func(s, fn)
		}},
	} {
		idempotent := c.idempotent
		t.Run(c.name, func(t *testing.T) {
			e := newEnv()
			runs := 0
			crash := make(chan struct{})
			var spec = model.ToolSpec{Name: "act", Parameters: objSchema}
			fn := func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
				runs++
				if runs == 1 {
					close(crash)
					<-ctx.Done() // the process "dies" here
					return tool.Result{}, ctx.Err()
				}
				return tool.Result{Output: "done again"}, nil
			}
			tl := c.build(spec, fn)
			m := scripted.Replies(scripted.Call("act", `{"path":"a"}`), scripted.Text("finished"))
			ctx, cancel := context.WithCancel(t.Context())
			r := e.runner(t, m, []tool.Tool{tl}, nil)
			s, err := r.Start(ctx, loop.Task{Prompt: "x"})
			if err != nil {
				t.Fatal(err)
			}
			<-crash
			// Simulate a crash: keep only what was durable when the tool started.
			evs, _ := e.log.Load(t.Context(), s.ID())
			keep := len(evs)
			cancel()
			<-s.Done()
			e.log.truncate(s.ID(), keep)
			if got := e.log.types(s.ID()); got[len(got)-1] != "tool.started" {
				t.Fatalf("log ends with %v", got)
			}

			r2 := e.runner(t, m, []tool.Tool{tl}, nil)
			s2, err := r2.Resume(t.Context(), s.ID(), "")
			if err != nil {
				t.Fatal(err)
			}
			st, _ := s2.Wait(t.Context())
			checkScript(t, m)
			call := st.Iterations[0].ToolCalls[0]
			if idempotent {
				if runs != 2 || call.Output != "done again" {
					t.Fatalf("runs %d output %q", runs, call.Output)
				}
			} else {
				if runs != 1 || !strings.Contains(call.Output, "may or may not have taken effect") || call.Status != loop.ToolError {
					t.Fatalf("runs %d output %q", runs, call.Output)
				}
			}
			if st.Status != loop.StatusCompleted || st.ToolCallCount != 1 {
				t.Fatalf("%s tool calls %d", st.Status, st.ToolCallCount)
			}
			refold(t, e, st)
		})
	}
}

type idem struct{ tool.Tool }

func (idem) Idempotent() bool { return true }

func TestRecoveryRedoesModelCallAfterCrash(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("answer"))
	r := e.runner(t, m, nil, func(c *loop.Config) { c.Limits.MaxIterations = 1 })
	st := run(t, r, "x")
	// Crash right after iteration.started was durable (drop the reply and the end).
	e.log.truncate(st.ID, 2)
	m2 := scripted.Replies(scripted.Text("answer again"))
	r2 := e.runner(t, m2, nil, func(c *loop.Config) { c.Limits.MaxIterations = 1 })
	s, err := r2.Resume(t.Context(), st.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	st, _ = s.Wait(t.Context())
	if st.Status != loop.StatusCompleted || st.Answer != "answer again" || len(st.Iterations) != 1 {
		t.Fatalf("%s %q %d", st.Status, st.Answer, len(st.Iterations))
	}
}

func TestApprovals(t *testing.T) {
	e := newEnv()
	rec := &recorder{}
	m := scripted.Replies(
		scripted.Call("write", `{"path":"a"}`),
		scripted.Call("write", `{"path":"b"}`),
		scripted.Call("write", `{"path":"c"}`),
		scripted.Text("done"),
	)
	ask := func(tool.Tool) loop.Policy { return loop.PolicyAsk }
	r := e.runner(t, m, []tool.Tool{echoTool("write", rec)}, func(c *loop.Config) { c.Approval = ask })
	st := run(t, r, "x")
	if st.Status != loop.StatusWaiting || st.Reason != loop.ReasonApproval || len(st.PendingApprovals) != 1 {
		t.Fatalf("%s %s %+v", st.Status, st.Reason, st.PendingApprovals)
	}
	p := st.PendingApprovals[0]
	if _, err := r.Resume(t.Context(), st.ID, ""); err == nil {
		t.Fatal("resume skipped a pending approval")
	}
	// A decision bound to other arguments is refused.
	if _, err := r.Decide(t.Context(), st.ID, loop.ApprovalDecision{CallID: p.CallID, ArgsHash: loop.ArgsHash("write", []byte(`{"path":"/etc"}`)), Approved: true}); err == nil || !strings.Contains(err.Error(), "arguments changed") {
		t.Fatalf("forged approval: %v", err)
	}
	// Approve a; a restart in between changes nothing: the runner is rebuilt from the log.
	r = e.runner(t, m, []tool.Tool{echoTool("write", rec)}, func(c *loop.Config) { c.Approval = ask })
	s, err := r.Decide(t.Context(), st.ID, loop.ApprovalDecision{CallID: p.CallID, ArgsHash: p.ArgsHash, Approved: true})
	if err != nil {
		t.Fatal(err)
	}
	st, _ = s.Wait(t.Context())
	p = st.PendingApprovals[0]
	s, _ = r.Decide(t.Context(), st.ID, loop.ApprovalDecision{CallID: p.CallID, ArgsHash: p.ArgsHash, Approved: false, Reason: "not b"})
	st, _ = s.Wait(t.Context())
	p = st.PendingApprovals[0]
	s, _ = r.Decide(t.Context(), st.ID, loop.ApprovalDecision{CallID: p.CallID, ArgsHash: p.ArgsHash, Approved: true, EditedInput: []byte(`{"path":"c2"}`)})
	st, _ = s.Wait(t.Context())
	checkScript(t, m)
	if got := strings.Join(rec.list(), ","); got != "write:a,write:c2" {
		t.Fatalf("ran %s", got)
	}
	if got := toolMessages(m.Requests()[2]); !strings.Contains(got[1].Content, "denied by the user: not b") {
		t.Fatalf("denial: %+v", got)
	}
	if st.Status != loop.StatusCompleted {
		t.Fatal(st.Status)
	}
	refold(t, e, st)
}

func TestDenyPolicy(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("write", `{"path":"a"}`), scripted.Text("ok"))
	r := e.runner(t, m, []tool.Tool{echoTool("write", nil)}, func(c *loop.Config) {
		c.Approval = func(tool.Tool) loop.Policy { return loop.PolicyDeny }
	})
	run(t, r, "x")
	if got := toolMessages(m.Requests()[1]); !strings.Contains(got[0].Content, "not allowed") {
		t.Fatalf("%+v", got)
	}
}

func TestTextToolCallRecoveryAndCorrection(t *testing.T) {
	e := newEnv()
	rec := &recorder{}
	parse := func(text string, _ []model.ToolSpec) loop.Recovered {
		switch {
		case strings.HasPrefix(text, "CALL "):
			return loop.Recovered{Calls: []model.ToolCall{{Name: "read_file", Arguments: []byte(`{"path":"` + text[5:] + `"}`)}}, Format: "test"}
		case strings.HasPrefix(text, "<tool_call>"):
			return loop.Recovered{Attempted: true, Problem: "invalid JSON in <tool_call>."}
		}
		return loop.Recovered{Content: text}
	}
	m := scripted.Replies(
		scripted.Text("CALL a.go"),
		scripted.Text("<tool_call>{bad"),
		scripted.Text("CALL b.go").WithExpect(scripted.Expect{LastMessageContains: "invalid JSON"}),
		scripted.Text("<tool_call>{bad again"),
		scripted.Text("<tool_call>{bad a third time"),
	)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", rec)}, func(c *loop.Config) { c.ParseToolCalls = parse })
	st := run(t, r, "x")
	checkScript(t, m)
	if got := strings.Join(rec.list(), ","); got != "read_file:a.go,read_file:b.go" {
		t.Fatalf("ran %s", got)
	}
	// One correction per malformed reply in a row; the second in a row fails the session.
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonMalformedToolCall || st.Answer == "<tool_call>{bad a third time" || len(st.Warnings) != 1 {
		t.Fatalf("%s %q %+v", st.Status, st.Answer, st.Warnings)
	}
	evs, _ := e.log.Load(t.Context(), st.ID)
	for _, ev := range evs {
		if d, ok := ev.Data.(*loop.ModelResponded); ok && len(d.ToolCalls) > 0 && d.Format != "test" {
			t.Fatalf("format %q", d.Format)
		}
	}
}

func TestStreamingDeltasReachObserver(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("hello world").WithStreamChunk(3))
	var got strings.Builder
	r := e.runner(t, m, nil, func(c *loop.Config) {
		c.Limits.MaxIterations = 1
		c.OnDelta = func(_ string, d model.Delta) { got.WriteString(d.Text) }
	})
	run(t, r, "x")
	if got.String() != "hello world" {
		t.Fatalf("deltas %q", got.String())
	}
}

func TestManySessionsAtOnce(t *testing.T) {
	e := newEnv()
	script := &scripted.Script{Name: "many", Steps: []scripted.Step{scripted.Call("read_file", `{"path":"a"}`).WithDelay(time.Millisecond), scripted.Text("ok")}}
	var sessions []*loop.Session
	for range 100 {
		r := e.runner(t, scripted.NewCompact(script), []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) { c.NewID = loop.RandomID })
		s, err := r.Start(t.Context(), loop.Task{Prompt: "x"})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	for _, s := range sessions {
		st, err := s.Wait(t.Context())
		if err != nil || st.Status != loop.StatusCompleted {
			t.Fatalf("%v %v", err, st.Status)
		}
	}
}

func TestControlErrorsSayWhatToDo(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("write", `{"path":"a"}`), scripted.Text("done"))
	ask := func(tool.Tool) loop.Policy { return loop.PolicyAsk }
	r := e.runner(t, m, []tool.Tool{echoTool("write", nil)}, func(c *loop.Config) { c.Approval = ask })
	st := run(t, r, "x")
	if _, err := r.Decide(t.Context(), st.ID, loop.ApprovalDecision{CallID: "nope"}); err == nil || !strings.Contains(err.Error(), `no pending approval for call "nope"`) {
		t.Fatalf("unknown call: %v", err)
	}
	if _, err := r.Reply(t.Context(), st.ID, "hello"); err == nil || !strings.Contains(err.Error(), "approve or deny it") {
		t.Fatalf("reply while an approval is pending: %v", err)
	}
	p := st.PendingApprovals[0]
	s, err := r.Decide(t.Context(), st.ID, loop.ApprovalDecision{CallID: p.CallID, ArgsHash: p.ArgsHash, Approved: true})
	if err != nil {
		t.Fatal(err)
	}
	st, _ = s.Wait(t.Context())
	if _, err := r.Reply(t.Context(), st.ID, "more"); !errors.Is(err, loop.ErrFinished) {
		t.Fatalf("reply to an ended session: %v", err)
	}
	if _, err := r.Terminate(t.Context(), st.ID, ""); !errors.Is(err, loop.ErrFinished) {
		t.Fatalf("terminate an ended session: %v", err)
	}
	if _, err := r.Resume(t.Context(), "missing", ""); !errors.Is(err, loop.ErrNotFound) {
		t.Fatalf("resume of a missing session: %v", err)
	}
	if err := r.Pause("missing", ""); err == nil || !strings.Contains(err.Error(), "not running in this process") {
		t.Fatalf("pause: %v", err)
	}
}

func TestGuideReachesTheNextModelCall(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Call("read", `{"path":"a"}`).WithDelay(50*time.Millisecond),
		scripted.Text("done").WithExpect(scripted.Expect{LastMessageContains: "use the other file"}),
	)
	r := e.runner(t, m, []tool.Tool{echoTool("read", nil)}, nil)
	s, err := r.Start(t.Context(), loop.Task{Prompt: "read"})
	if err != nil {
		t.Fatal(err)
	}
	// Guide while the first model call is under way: the message is
	// recorded after that iteration, before the next call.
	for !slices.Contains(e.log.types(s.ID()), string(loop.TypeIterationStarted)) {
		time.Sleep(time.Millisecond)
	}
	s.Guide("use the other file")
	st, err := s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checkScript(t, m)
	if st.Status != loop.StatusCompleted {
		t.Fatalf("status %s %s", st.Status, st.Reason)
	}
	refold(t, e, st)
}

func TestGuidanceIsRecordedWhenTheSessionStopsFirst(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("slow").WithDelay(time.Hour))
	r := e.runner(t, m, nil, func(c *loop.Config) { c.Mode = loop.ModeSelfReasoning })
	s, err := r.Start(t.Context(), loop.Task{Prompt: "think"})
	if err != nil {
		t.Fatal(err)
	}
	for !slices.Contains(e.log.types(s.ID()), string(loop.TypeIterationStarted)) {
		time.Sleep(time.Millisecond)
	}
	s.Guide("try the other way")
	s.Terminate("different_approach")
	st, err := s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := refold(t, e, st)
	last := got.Conversation[len(got.Conversation)-1]
	if last.Content != "try the other way" || st.Status != loop.StatusTerminated {
		t.Fatalf("status %s, last message %q", st.Status, last.Content)
	}
}

// A reply the provider already read under the model's own rules (and
// found no call in) is the answer: the runner does not recover a call
// from it with its looser parser.
func TestTextTheProviderReadIsNotReadAgain(t *testing.T) {
	e := newEnv()
	rec := &recorder{}
	parse := func(text string, _ []model.ToolSpec) loop.Recovered {
		if strings.HasPrefix(text, "CALL ") {
			return loop.Recovered{Calls: []model.ToolCall{{Name: "read_file", Arguments: []byte(`{"path":"a.go"}`)}}, Format: "test"}
		}
		return loop.Recovered{Content: text}
	}
	m := model.Func(func(context.Context, *model.Request, model.StreamFunc) (*model.Response, error) {
		return &model.Response{Text: "CALL a.go is how you would do it", FinishReason: model.FinishStop, TextRead: true}, nil
	})
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", rec)}, func(c *loop.Config) { c.ParseToolCalls = parse })
	st := run(t, r, "x")
	if len(rec.list()) != 0 || st.Status != loop.StatusCompleted || st.Answer != "CALL a.go is how you would do it" {
		t.Fatalf("ran %v; %s %q", rec.list(), st.Status, st.Answer)
	}
}
