package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"sync"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

var errToolTimeout = errors.New("tool call timed out")

// ArgsHash binds an approval to the exact arguments it was shown.
func ArgsHash(name string, args json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(compactJSON(args))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// runCalls performs the policy's decision about the next pending tool
// call (toolCall). It returns after one call so the run loop can look at
// controls in between.
func (s *Session) runCalls(ctx context.Context) error {
	next, input := s.decideCall()
	if next != runTool && next != rerunTool {
		return nil
	}
	call := s.state.PendingCalls[0]
	t, _ := s.env.Tools.Lookup(call.Name)
	if next == rerunTool {
		calls := newToolCalls(ctx, false)
		defer calls.release()
		return s.execute(calls, t, call, input)
	}
	// runTool: tool.started is recorded. From here the call is made and
	// recorded whole, even if the process is shutting down meanwhile (its
	// grace period bounds the wait): a call cut between tool.started and
	// its run would count as maybe-run, and a tool that is not idempotent
	// would then never be made.
	calls := s.toolCallsIn(ctx)
	ctx = calls.ctx
	// A tool that is not idempotent runs only once tool.started is durable:
	// after a crash it is never silently run again. An idempotent one may
	// run while the commit is in flight — if the process dies first, the
	// call is simply made again on recovery.
	kind := effectTool
	if tool.IsIdempotent(t) {
		kind = effectIdempotentTool
	}
	if err := s.commitFor(ctx, kind); err != nil {
		return err
	}
	return s.execute(calls, t, call, input)
}

// decideCall records the policy's decision about the next pending call and
// returns what to perform. Apart from runCalls so that the decision's
// frame is not on the stack while the tool runs (see responded).
//
//go:noinline
func (s *Session) decideCall() (next, json.RawMessage) {
	step := s.policy().toolCall(s.state)
	s.record(step.Events)
	return step.Next, step.Input
}

// execute runs one tool with the per-call timeout and records the result.
func (s *Session) execute(calls *toolCalls, t tool.Tool, call model.ToolCall, input json.RawMessage) error {
	st, cfg := s.state, &s.r.cfg
	ctx := calls.ctx
	// The call's own context ends with it: work a tool leaves tied to it
	// (a goroutine, a process) does not outlive the call.
	var tctx context.Context
	var cancel context.CancelFunc
	if d := st.Limits.ToolCallTimeout.Std(); d > 0 {
		tctx, cancel = context.WithTimeoutCause(ctx, d, errToolTimeout)
	} else {
		tctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	calls.begin()
	start := cfg.Clock()
	var effects []Payload
	var res tool.Result
	refused := false // the OS or the workspace denied the tool access
	failed := false  // the tool returned an error: it could not do the call
	if stool, ok := t.(SessionTool); ok {
		var err error
		res, effects, err = stool.CallSession(tctx, st, input)
		failed = err != nil
		if err != nil {
			res, effects = tool.Result{Output: "error: " + err.Error(), IsError: true}, nil
		}
	} else {
		var err error
		res, err = tool.Execute(tctx, t, input)
		refused = errors.Is(err, iofs.ErrPermission)
		failed = err != nil
	}
	dur := cfg.Clock().Sub(start)
	if tctx.Err() != nil {
		failed = true
		switch cause := context.Cause(tctx); {
		case errors.Is(cause, errTerminated):
			res = tool.Result{Output: "stopped: the session was terminated while the tool ran; its effects may be partial\n" + res.Output, IsError: true}
		case errors.Is(cause, errToolTimeout):
			res = tool.Result{Output: fmt.Sprintf("timed out after %s and was stopped; its effects may be partial\n%s", st.Limits.ToolCallTimeout, res.Output), IsError: true}
		case errors.Is(cause, errSessionTimeout):
			res = tool.Result{Output: "stopped: the session ran out of time while the tool ran\n" + res.Output, IsError: true}
		default:
			res = tool.Result{Output: "interrupted: the process stopped while the tool ran; its effects may be partial\n" + res.Output, IsError: true}
		}
	}
	mods := calls.end()
	s.emit(&ToolFinished{Iteration: st.CurrentIteration, CallID: call.ID, Name: call.Name, Output: res.Output, IsError: res.IsError, Failed: failed, DurationMS: dur.Milliseconds(), Modified: mods, Images: res.Images})
	if refused && tctx.Err() == nil {
		return s.permissionDenied(ctx, call, res.Output)
	}
	for _, p := range effects {
		switch p := p.(type) {
		case *Finish:
			// Calls after final_answer in the same reply do not run.
			for _, rest := range st.PendingCalls {
				s.emit(&ToolFinished{Iteration: st.CurrentIteration, CallID: rest.ID, Name: rest.Name, Output: "not run: the session ended with a final answer", IsError: true, Refused: true})
			}
			if !st.planFailed() && (p.Failed || AdmitsFailure(p.Answer)) {
				s.record(gaveUp(st, p.Answer))
				return nil
			}
			return s.complete(ctx, p.Answer)
		case *SessionWaiting:
			// The person's answer must follow every result of this reply,
			// so the rest of the reply does not run and the iteration ends.
			for _, rest := range st.PendingCalls {
				s.emit(&ToolFinished{Iteration: st.CurrentIteration, CallID: rest.ID, Name: rest.Name, Output: "not run: the session is waiting for the user's answer; ask again afterwards if still needed", IsError: true, Refused: true})
			}
			s.closeIteration(IterationCompleted, "", "")
			s.emit(p)
			return nil
		case *PlanUpdated, *MemorySet, *Warning:
			s.emit(p)
		default:
			s.emit(&Warning{Code: WarnBadToolEffect, Message: fmt.Sprintf("tool %s returned a %s event, which tools may not record", call.Name, p.EventType())})
		}
	}
	return nil
}

// toolCalls is the context a session's tool calls run in, with the
// reporter of the files a call modifies. The session's is made at its
// first call and kept until the turns that made it return (Session.run,
// a stepwise step), not made again for every call.
type toolCalls struct {
	ctx     context.Context
	release func()

	mu sync.Mutex
	// open says a call is running: a report counts for the call running
	// when it is made, and is dropped when none runs.
	open     bool
	modified []tool.Modification
}

// newToolCalls makes the context for tool calls under ctx; with
// despiteShutdown they finish even when the process shuts down
// (finishDespiteShutdown).
func newToolCalls(ctx context.Context, despiteShutdown bool) *toolCalls {
	tc := &toolCalls{release: func() {}}
	if despiteShutdown {
		ctx, tc.release = finishDespiteShutdown(ctx)
	}
	tc.ctx = tool.WithReporter(ctx, tc.report)
	return tc
}

func (tc *toolCalls) report(m tool.Modification) {
	tc.mu.Lock()
	if tc.open {
		tc.modified = append(tc.modified, m)
	}
	tc.mu.Unlock()
}

// begin opens a call; end closes it and returns what it reported.
func (tc *toolCalls) begin() {
	tc.mu.Lock()
	tc.open, tc.modified = true, nil
	tc.mu.Unlock()
}

func (tc *toolCalls) end() []tool.Modification {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	m := tc.modified
	tc.open, tc.modified = false, nil
	return m
}

// toolCallsIn is the session's context for tool calls under ctx (the
// turns' call context, the same for every call until they return),
// made at the first call.
func (s *Session) toolCallsIn(ctx context.Context) *toolCalls {
	if s.calls == nil {
		s.calls = newToolCalls(ctx, true)
	}
	return s.calls
}

// releaseToolCalls ends the session's context for tool calls, when the
// turns that made it return.
func (s *Session) releaseToolCalls() {
	if s.calls != nil {
		s.calls.release()
		s.calls = nil
	}
}

// finishDespiteShutdown returns a context that ends with ctx unless ctx
// ends because the process is shutting down gracefully (cause ErrShutdown):
// then the work under way finishes, and the session pauses after it. A
// person's terminate, a timeout or an interrupt still end it at once.
func finishDespiteShutdown(ctx context.Context) (context.Context, func()) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); !errors.Is(cause, ErrShutdown) {
			cancel(cause)
		}
	})
	return out, func() { stop(); cancel(nil) }
}
