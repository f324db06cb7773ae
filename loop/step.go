package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentloop/agentloop/model"
)

var (
	errSessionTimeout   = errors.New("session timed out")
	errModelCallTimeout = errors.New("model call timed out")
)

// run drives the session until it ends, pauses or waits. Each turn of the
// loop looks at the state and takes the next step, so a session rebuilt from
// its log after a crash continues exactly where the log stops.
func (s *Session) run(ctx context.Context) error {
	callCtx, cancel := s.withSessionTimeout(ctx)
	defer cancel()
	defer s.releaseToolCalls()
	for {
		if stopped, err := s.turn(ctx, callCtx); stopped || err != nil {
			return err
		}
	}
}

// withSessionTimeout bounds the session's work by its timeout, on the
// runner's clock.
func (s *Session) withSessionTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	d := s.state.Limits.Timeout.Std()
	if d <= 0 {
		return ctx, func() {}
	}
	left := s.state.StartedAt.Add(d).Sub(s.r.cfg.Clock())
	return context.WithTimeoutCause(ctx, left, errSessionTimeout)
}

// turn takes the next step. stopped reports that the session no longer
// runs here (ended, paused, waiting); err that persistence failed and
// nothing more can be recorded safely.
func (s *Session) turn(ctx, callCtx context.Context) (stopped bool, err error) {
	st := s.state
	if st.Status.Finished() {
		return true, s.finish(ctx)
	}
	if st.Status == StatusPaused || st.Status == StatusWaiting {
		return true, s.flush(ctx)
	}
	if _, ok := s.terminateRequested(); ok {
		return true, s.endTerminated(ctx)
	}
	if ctx.Err() != nil {
		// The caller stopped us (Ctrl-C, shutdown): pause so the
		// session can be resumed; an open iteration is redone.
		if errors.Is(context.Cause(ctx), ErrShutdown) {
			s.emit(&SessionPaused{Reason: ReasonShutdown, Detail: "the server shut down; it resumes the session when it starts again"})
			return false, nil
		}
		s.emit(&SessionPaused{Reason: ReasonInterrupted, Detail: "the process running the session stopped"})
		return false, nil
	}
	switch phaseOf(st) {
	case phaseSettle:
		return false, s.settle(callCtx, st.PendingAnswer, st.answerChecked(st.Seq))
	case phaseModel:
		return false, s.callModel(callCtx)
	case phaseTools:
		return false, s.runCalls(callCtx)
	case phaseIterationDone:
		return false, s.endIteration(ctx)
	}
	return false, s.between(ctx)
}

// between runs at an iteration boundary: a person's messages, controls,
// stop conditions, then the next iteration — as the policy decides.
func (s *Session) between(ctx context.Context) error {
	s.record(guidance(s.takeGuidance()))
	s.record(s.takeRevoked())
	note, pause := s.pauseRequested()
	if pause {
		s.mu.Lock()
		s.pauseReq = ""
		s.mu.Unlock()
	}
	return s.perform(ctx, s.policy().boundary(s.state, s.r.cfg.Clock(), s.stop, s.nextCall(), note, pause))
}

// request is the next model call's request: the conversation with the
// per-request context, the tools, and the output cap.
func (s *Session) request() *model.Request {
	// Request.Model stays empty: the client sends the bare name it was
	// opened with; st.Model is the recorded PROVIDER/NAME spec, which no
	// provider accepts on the wire.
	return &model.Request{Messages: withContext(s.state, s.env.Context), Tools: s.env.Tools.Specs(), MaxTokens: s.state.Limits.outputCap()}
}

// nextCall is the most the next model call can spend, for the budgets
// (zero without one: counting the conversation's tokens is not free).
func (s *Session) nextCall() CallEstimate {
	l := s.state.Limits
	if l.BudgetTokens <= 0 && l.BudgetUSD <= 0 {
		return CallEstimate{}
	}
	return s.estimate(s.request())
}

// estimate counts req's input with the runner's tokenizer (4 bytes a
// token without one) and prices it with the output req asks for at most.
func (s *Session) estimate(req *model.Request) CallEstimate {
	e := CallEstimate{OutputTokens: req.MaxTokens}
	if f := s.r.cfg.EstimateUsage; f != nil {
		e.InputTokens = f(req, nil).InputTokens
	} else {
		n := 0
		for _, m := range req.Messages {
			n += len(m.Content) + 16
			for _, c := range m.ToolCalls {
				n += len(c.Name) + len(c.Arguments)
			}
		}
		for _, t := range req.Tools {
			n += len(t.Name) + len(t.Description) + len(t.Parameters)
		}
		e.InputTokens = n / 4
	}
	e.CostUSD = s.cost(model.Usage{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens})
	return e
}

// callModel makes the current iteration's model call and records the reply.
func (s *Session) callModel(ctx context.Context) error {
	if ok, err := s.fitContext(ctx); !ok || err != nil {
		return err
	}
	req := s.request()
	if err := s.commitFor(ctx, effectModelCall); err != nil {
		return err
	}
	resp, dur, err := s.generate(ctx, req)
	if err != nil {
		return s.modelFailed(ctx, err, dur)
	}
	return s.responded(ctx, req, resp, dur)
}

// responded records the model's reply and decides what follows. It is
// apart from callModel so that its frame is not on the stack during the
// call: the reply is decoded at the deepest point of a session's stack,
// and a stack that grows past 8 KiB there stays 16 KiB for the rest of
// the session.
//
//go:noinline
func (s *Session) responded(ctx context.Context, req *model.Request, resp *model.Response, dur time.Duration) error {
	st, cfg := s.state, &s.r.cfg
	calls, text, format := resp.ToolCalls, resp.Text, ""
	var rec Recovered
	if len(calls) > 0 {
		format = "native"
	} else if cfg.ParseToolCalls != nil && len(req.Tools) > 0 && !resp.TextRead {
		rec = cfg.ParseToolCalls(resp.Text, req.Tools)
		if len(rec.Calls) > 0 {
			calls, text, format = rec.Calls, rec.Content, rec.Format
		}
	}
	calls = s.normaliseCalls(calls)
	truncated := resp.FinishReason == model.FinishLength
	if truncated {
		// Nothing in a cut-off reply runs: its calls' arguments may be cut.
		calls, text = nil, resp.Text
	}
	s.emit(&ModelResponded{
		Iteration: st.CurrentIteration, Text: text, ToolCalls: calls, Reasoning: resp.Reasoning,
		FinishReason: resp.FinishReason, Usage: resp.Usage, CostUSD: s.cost(resp.Usage),
		DurationMS: dur.Milliseconds(), Format: format,
	})
	if truncated {
		return s.perform(ctx, s.policy().truncated(s.state, resp.Text, len(resp.ToolCalls)+len(rec.Calls) > 0))
	}
	if len(calls) > 0 {
		return nil // the calls run next
	}
	return s.perform(ctx, s.policy().reply(s.state, text, rec))
}

func (s *State) previousWasCorrection() bool {
	its := s.Iterations
	return len(its) >= 2 && its[len(its)-2].Correction
}

func (s *State) planContinuations() int {
	n := 0
	its := s.Iterations
	// The current iteration holds the prose reply being judged; count the
	// earlier iterations in a row that ended with a continuation.
	for i := len(its) - 2; i >= 0; i-- {
		cont := false
		for _, m := range its[i].Messages {
			cont = cont || m.Kind == KindContinue
		}
		if !cont || len(its[i].ToolCalls) > 0 {
			break
		}
		n++
	}
	return n
}

func planPending(p *Plan) bool {
	if p.Status == PlanCompleted || p.Status == PlanFailed {
		return false
	}
	for _, st := range p.Steps {
		if st.Status == "" || st.Status == StepPending || st.Status == StepInProgress {
			return true
		}
	}
	return false
}

// afterMarker returns the text after the completion marker.
func afterMarker(text, marker string) (string, bool) {
	i := strings.LastIndex(text, marker)
	if i < 0 {
		return "", false
	}
	return strings.TrimSpace(text[i+len(marker):]), true
}

// generate calls the model with the per-call timeout and streaming hook.
func (s *Session) generate(ctx context.Context, req *model.Request) (*model.Response, time.Duration, error) {
	cfg := &s.r.cfg
	if d := s.state.Limits.ModelCallTimeout.Std(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, errModelCallTimeout)
		defer cancel()
	}
	var stream model.StreamFunc
	if cfg.OnDelta != nil {
		id, fn := s.id, cfg.OnDelta
		stream = func(d model.Delta) { fn(id, d) }
	}
	s.calling.Store(int64(s.state.CurrentIteration))
	start := cfg.Clock()
	resp, err := s.env.Model.Generate(ctx, req, stream)
	dur := cfg.Clock().Sub(start)
	if err != nil || resp == nil {
		return nil, dur, generateFailed(ctx, err)
	}
	// A provider that sent no usage may have guessed it crudely; the
	// runner's estimator (a real tokenizer in the CLI) does better.
	if (resp.Usage == (model.Usage{}) || resp.UsageEstimated) && cfg.EstimateUsage != nil {
		resp.Usage = cfg.EstimateUsage(req, resp)
		resp.UsageEstimated = true
	}
	return resp, dur, nil
}

// generateFailed is the error of a model call that returned err (nil when
// it returned no reply either), with the cause of ctx's end when it ended.
// Out of generate's frame, which is on the stack during the call.
//
//go:noinline
func generateFailed(ctx context.Context, err error) error {
	if err == nil {
		err = fmt.Errorf("%w: the model returned no reply and no error", model.ErrMalformed)
	}
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", cause, err)
	}
	return err
}

// modelFailed records a failed call and decides what follows: retries ran
// out → pause (resume redoes the call); a call or session timeout → the
// iteration fails and the stop conditions decide; anything else ends the
// session with an error.
func (s *Session) modelFailed(ctx context.Context, err error, dur time.Duration) error {
	st := s.state
	if _, term := s.terminateRequested(); term {
		return nil // run() records the termination
	}
	if errors.Is(err, errTerminated) {
		return nil
	}
	parentGone := ctx.Err() != nil && !errors.Is(context.Cause(ctx), errSessionTimeout)
	if parentGone {
		return nil // run() pauses as interrupted; the iteration is redone
	}
	sessionTimeout := errors.Is(err, errSessionTimeout)
	timeout := errors.Is(err, errModelCallTimeout) || sessionTimeout || errors.Is(err, model.ErrTimeout)
	retryable := errors.Is(err, model.ErrRetryable)
	malformed := errors.Is(err, model.ErrMalformed)
	s.emit(&ModelFailed{Iteration: st.CurrentIteration, Error: err.Error(), Retryable: retryable, Timeout: timeout, Malformed: malformed, DurationMS: dur.Milliseconds()})
	unavailable := errors.Is(err, model.ErrModelUnavailable)
	before := st.CurrentModel
	if err := s.perform(ctx, s.policy().modelFailed(s.state, modelFault{Err: err.Error(), Retryable: retryable, Timeout: timeout, SessionTimeout: sessionTimeout, Malformed: malformed, Unavailable: unavailable})); err != nil {
		return err
	}
	if s.state.CurrentModel != before {
		return s.switchModel(ctx)
	}
	return nil
}

// switchModel opens the model a model.switched moved the session to: the
// Env's SwitchModel, or the Env resolved again from the state.
func (s *Session) switchModel(ctx context.Context) error {
	if s.env != nil && s.env.SwitchModel != nil {
		m, err := s.env.SwitchModel(s.state.CurrentModel)
		if err != nil {
			return fmt.Errorf("session %s: model %q: %w", s.id, s.state.CurrentModel, err)
		}
		s.env.Model = m
		return nil
	}
	if s.env != nil && s.env.Close != nil {
		s.env.Close()
	}
	s.env = nil
	return s.needEnv(ctx)
}

// normaliseCalls gives every call a unique ID and an object for arguments.
func (s *Session) normaliseCalls(calls []model.ToolCall) []model.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(calls))
	out := calls[:0:0]
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			c.ID = fmt.Sprintf("call_%d_%d", s.state.CurrentIteration, i+1)
		}
		seen[c.ID] = true
		if len(c.Arguments) == 0 || string(c.Arguments) == "null" {
			c.Arguments = []byte("{}") // some models send null for tools without arguments
		} else if !json.Valid(c.Arguments) {
			// Keep what the model wrote, as a JSON string, so the log stays
			// valid JSON and validation can tell the model what is wrong.
			c.Arguments, _ = json.Marshal(string(c.Arguments))
		}
		out = append(out, c)
	}
	return out
}

func (s *Session) cost(u model.Usage) float64 {
	if s.r.cfg.Price == nil {
		return 0
	}
	usd, _ := s.r.cfg.Price(s.state.CurrentModel, u) // priced per model: a fallback's own prices
	return usd
}

// endIteration closes the current iteration and looks for repetition.
// The iteration's end is recorded here rather than under perform: folding
// it (stuck detection reduces the iteration) is among the deepest points
// of a session's stack between model calls, and perform's frame would add
// to it (see TestSessionStackStaysSmall).
func (s *Session) endIteration(ctx context.Context) error {
	step := s.policy().iterationDone(s.state)
	s.record(step.Events)
	step.Events = nil
	return s.perform(ctx, step)
}

// complete closes the iteration with the model's final answer and
// settles it.
func (s *Session) complete(ctx context.Context, answer string) error {
	return s.perform(ctx, Step{Events: iterationEnd(s.state, IterationCompleted, "", answer), Next: settleAnswer, Answer: answer})
}

// settle decides a final answer: the gate (unless its verdict is already
// recorded), a failed plan, then verification when the session has a
// verifier. The reply and the answer are durable before the gate or the
// verifier runs, so a crash during a long verification settles the same
// answer on resume. A failed verification goes back to the model while
// iterations remain, so it can fix what is wrong.
func (s *Session) settle(ctx context.Context, answer string, gateDone bool) error {
	st := s.state
	if step, ok := s.policy().answerCheck(st, answer); !ok {
		s.record(step.Events)
		return nil
	}
	if !gateDone && s.env.Gate != nil {
		if err := s.commitFor(ctx, effectCheck); err != nil {
			return err
		}
		if !s.gateAnswer(ctx, answer) {
			return nil // the gate added what comes next
		}
	}
	if end := planEnd(st, answer); end != nil {
		s.record(end)
		return nil
	}
	if s.env.Verifier != nil {
		if err := s.commitFor(ctx, effectCheck); err != nil {
			return err
		}
	}
	outcome := s.verify(ctx, "completion")
	if outcome != "" && outcome != VerifyPass && ctx.Err() != nil {
		return nil // interrupted while verifying: run() pauses; resume verifies again
	}
	return s.perform(ctx, s.policy().verified(s.state, answer, outcome))
}

// endByLimit ends the session for a limit as the policy decides: first,
// when it allows, one tool-less wrap-up call for a best-effort answer (a
// session that crashed after it does not call again), then the
// verification, then the end (limitEnd).
func (s *Session) endByLimit(ctx context.Context, d Decision) error {
	st := s.state
	var reply *string
	if ask := s.policy().wrapUp(st, d, ctx.Err() != nil, s.wrapUpCall(d.Reason)); ask != nil {
		s.emit(ask)
		if err := s.commitFor(ctx, effectModelCall); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, s.wrapUpTimeout())
		resp, dur, err := s.generate(wctx, &model.Request{Messages: st.Conversation, MaxTokens: st.Limits.outputCap()})
		cancel()
		if err == nil {
			s.emit(&ModelResponded{Iteration: st.CurrentIteration, Text: resp.Text, Reasoning: resp.Reasoning, FinishReason: resp.FinishReason,
				Usage: resp.Usage, CostUSD: s.cost(resp.Usage), DurationMS: dur.Milliseconds(), WrapUp: true})
			reply = &resp.Text
		} else if _, term := s.terminateRequested(); !term {
			s.emit(&Warning{Code: WarnWrapUpFailed, Message: "the final best-effort call failed: " + err.Error()})
		}
	}
	if ctx.Err() == nil && s.env.Verifier != nil {
		if err := s.commitFor(ctx, effectCheck); err != nil {
			return err
		}
		s.verify(ctx, "limit")
	}
	s.record(limitEnd(s.state, d, reply))
	return nil
}

// wrapUpCall is the most the wrap-up call can spend, for the budgets
// (zero without one: counting the conversation's tokens is not free).
func (s *Session) wrapUpCall(reason StopReason) CallEstimate {
	st := s.state
	if st.Limits.BudgetTokens <= 0 && st.Limits.BudgetUSD <= 0 {
		return CallEstimate{}
	}
	msgs := append(st.Conversation[:len(st.Conversation):len(st.Conversation)], model.Message{Role: model.RoleUser, Content: s.r.cfg.Texts.WrapUp(reason)})
	return s.estimate(&model.Request{Messages: msgs, MaxTokens: st.Limits.outputCap()})
}

// wrapUpTimeout bounds the wrap-up call: the model call limit (2 minutes
// by default), and with a session time limit, the time left or a grace of
// a tenth of the limit (at least 5 s), whichever is longer — so a session
// that ran out of time still ends promptly.
func (s *Session) wrapUpTimeout() time.Duration {
	l := s.state.Limits
	d := 2 * time.Minute
	if l.ModelCallTimeout > 0 {
		d = l.ModelCallTimeout.Std()
	}
	if limit := l.Timeout.Std(); limit > 0 {
		left := s.state.StartedAt.Add(limit).Sub(s.r.cfg.Clock())
		d = min(d, max(left, limit/10, 5*time.Second))
	}
	return d
}

// endTerminated records a termination: open calls get results, the open
// iteration fails, and the session ends.
func (s *Session) endTerminated(ctx context.Context) error {
	reason, _ := s.terminateRequested()
	s.record(terminated(s.state, reason))
	return s.flush(ctx)
}

// withContext adds per-request context (the plan, say) to the system
// message of a copy of the conversation. It is derived from the state, so
// the log still determines exactly what the model saw.
func withContext(st *State, fn func(*State) string) []model.Message {
	if fn == nil {
		return st.Conversation
	}
	extra := fn(st)
	if extra == "" {
		return st.Conversation
	}
	msgs := make([]model.Message, len(st.Conversation), len(st.Conversation)+1)
	copy(msgs, st.Conversation)
	if len(msgs) > 0 && msgs[0].Role == model.RoleSystem {
		msgs[0].Content += "\n\n" + extra
		return msgs
	}
	return append([]model.Message{{Role: model.RoleSystem, Content: extra}}, msgs...)
}
