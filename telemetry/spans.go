package telemetry

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/loop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Attribute names of the GenAI semantic conventions, and agentloop's own.
const (
	attrOperation     = "gen_ai.operation.name"
	attrProvider      = "gen_ai.provider.name"
	attrRequestModel  = "gen_ai.request.model"
	attrInputTokens   = "gen_ai.usage.input_tokens"
	attrOutputTokens  = "gen_ai.usage.output_tokens"
	attrFinishReasons = "gen_ai.response.finish_reasons"
	attrConversation  = "gen_ai.conversation.id"
	attrAgentName     = "gen_ai.agent.name"
	attrToolName      = "gen_ai.tool.name"
	attrToolCallID    = "gen_ai.tool.call.id"
	attrToolType      = "gen_ai.tool.type"
	attrTokenType     = "gen_ai.token.type"
	attrErrorType     = "error.type"
	attrResponseModel = "gen_ai.response.model"
	attrIteration     = "agentloop.iteration"
	attrStatus        = "agentloop.status"
	attrReason        = "agentloop.reason"
	attrTenant        = "agentloop.tenant"
	attrOutcome       = "agentloop.outcome"
	attrCost          = "agentloop.cost_usd"
)

// sessionTrace is one session as this process runs it: the spans open
// for it. Span contents are metadata only — never a task, a reply, tool
// arguments or tool output, which may hold secrets or personal data.
type sessionTrace struct {
	id                     string
	model, provider, agent string
	tenant                 string

	// measured are the attribute sets of its model calls' measurements,
	// made on first use: they are the same for every call.
	measured *modelMeasures

	ctx     context.Context // carries the session span
	root    trace.Span
	iterCtx context.Context // carries the iteration span
	iter    trace.Span
}

func (s *sessionTrace) setSpec(d *loop.SessionStarted) {
	s.model, s.tenant = d.Model, d.Tenant
	s.provider = "unknown"
	if path, ok := strings.CutPrefix(d.Model, "script:"); ok {
		s.provider, s.model = "scripted", filepath.Base(path) // the file's name: a bounded label
	} else if p, name, ok := strings.Cut(d.Model, "/"); ok {
		s.provider, s.model = p, name
	}
	s.agent = d.Profile
	if s.agent == "" {
		s.agent = "agentloop"
	}
}

type modelMeasures struct {
	call, ok, failed, input, output metric.MeasurementOption
}

func (s *sessionTrace) measures() *modelMeasures {
	if s.measured == nil {
		a := s.modelAttrs()
		s.measured = &modelMeasures{call: withAttrs(a), ok: withAttrs(append(a, outcome("ok"))), failed: withAttrs(append(a, outcome("error"))),
			input: withAttrs(append(a, tokenType("input"))), output: withAttrs(append(a, tokenType("output")))}
	}
	return s.measured
}

// modelAttrs label a model call's measurements (bounded: see modelLabel).
func (s *sessionTrace) modelAttrs() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(attrOperation, "chat"), attribute.String(attrProvider, s.provider), attribute.String(attrRequestModel, modelLabel(s.provider, s.model))}
}

// span advances the session's spans by one committed event. Spans take
// the events' own times, so a trace shows when things happened, not when
// their commit was heard of.
func (s *sessionTrace) span(tr trace.Tracer, calls *calls, e loop.Event) {
	if s.root == nil {
		s.start(tr, e.Time)
	}
	switch d := e.Data.(type) {
	case *loop.IterationStarted:
		s.endIteration(e.Time, "")
		s.iterCtx, s.iter = tr.Start(s.ctx, "iteration", trace.WithTimestamp(e.Time),
			trace.WithAttributes(attribute.Int(attrIteration, d.N), attribute.String(attrConversation, s.id)))
	case *loop.IterationEnded:
		var failed string
		if d.Status == loop.IterationFailed {
			failed = d.Error
			if failed == "" {
				failed = "iteration failed"
			}
		}
		s.endIteration(e.Time, failed)
	case *loop.ModelResponded:
		attrs := append(s.modelAttrs(), attribute.String(attrConversation, s.id),
			attribute.Int(attrInputTokens, d.Usage.InputTokens), attribute.Int(attrOutputTokens, d.Usage.OutputTokens),
			attribute.Int(attrIteration, d.Iteration), attribute.Float64(attrCost, d.CostUSD))
		if d.FinishReason != "" {
			attrs = append(attrs, attribute.StringSlice(attrFinishReasons, []string{d.FinishReason}))
		}
		k, _ := calls.pop(s.id)
		_, sp := tr.Start(withIDs(s.parent(), trace.TraceID{}, k.span), "chat "+s.model, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(e.Time.Add(-time.Duration(d.DurationMS)*time.Millisecond)), trace.WithAttributes(append(attrs, k.attrs...)...))
		sp.End(trace.WithTimestamp(e.Time))
	case *loop.ModelFailed:
		k, ok := calls.pop(s.id)
		if !ok { // made by a process that did not wrap the model: what the event says
			k.attrs = []attribute.KeyValue{errorType(modelErrorType(d))}
		}
		_, sp := tr.Start(withIDs(s.parent(), trace.TraceID{}, k.span), "chat "+s.model, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(e.Time.Add(-time.Duration(d.DurationMS)*time.Millisecond)),
			trace.WithAttributes(append(append(s.modelAttrs(), attribute.String(attrConversation, s.id), attribute.Int(attrIteration, d.Iteration)), k.attrs...)...))
		sp.SetStatus(codes.Error, d.Error)
		sp.End(trace.WithTimestamp(e.Time))
	case *loop.ToolFinished:
		var k call
		if !d.Refused && !d.Unknown {
			k, _ = calls.pop(toolKey(s.id, d.Name))
		}
		_, sp := tr.Start(withIDs(s.parent(), trace.TraceID{}, k.span), "execute_tool "+d.Name, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(e.Time.Add(-time.Duration(d.DurationMS)*time.Millisecond)),
			trace.WithAttributes(attribute.String(attrOperation, "execute_tool"), attribute.String(attrToolName, d.Name),
				attribute.String(attrToolCallID, d.CallID), attribute.String(attrToolType, "function"),
				attribute.String(attrConversation, s.id), attribute.Int(attrIteration, d.Iteration)))
		if d.IsError {
			sp.SetAttributes(errorType(toolErrorType(d)))
			sp.SetStatus(codes.Error, toolErrorType(d))
		}
		sp.End(trace.WithTimestamp(e.Time))
	case *loop.ConversationCondensed:
		if d.Asked { // the summary's model call: no span of its own, its place in the queue goes
			calls.pop(s.id)
		}
	case *loop.SessionEnded:
		s.end(e.Time, d.Status, d.Reason)
	case *loop.SessionPaused:
		s.end(e.Time, loop.StatusPaused, d.Reason)
	case *loop.SessionWaiting:
		s.end(e.Time, loop.StatusWaiting, d.Reason)
	}
}

// start opens the session's span: "invoke_agent", the GenAI operation of
// an agent working on a task, from the first event this process commits
// for it (session.started, or the resume of a stored session).
func (s *sessionTrace) start(tr trace.Tracer, at time.Time) {
	attrs := []attribute.KeyValue{attribute.String(attrOperation, "invoke_agent"), attribute.String(attrAgentName, s.agent),
		attribute.String(attrConversation, s.id), attribute.String(attrProvider, s.provider), attribute.String(attrRequestModel, s.model)}
	if s.tenant != "" {
		attrs = append(attrs, attribute.String(attrTenant, s.tenant))
	}
	s.ctx, s.root = tr.Start(withIDs(context.Background(), SessionTraceID(s.id), trace.SpanID{}), "invoke_agent "+s.agent, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

func (s *sessionTrace) parent() context.Context {
	if s.iter != nil {
		return s.iterCtx
	}
	return s.ctx
}

func (s *sessionTrace) endIteration(at time.Time, failed string) {
	if s.iter == nil {
		return
	}
	if failed != "" {
		s.iter.SetStatus(codes.Error, failed)
	}
	s.iter.End(trace.WithTimestamp(at))
	s.iter, s.iterCtx = nil, nil
}

// end closes the session's spans; status "" when the process stops with
// the session still running.
func (s *sessionTrace) end(at time.Time, status loop.Status, reason loop.StopReason) {
	if s.root == nil {
		return
	}
	s.endIteration(at, "")
	if status == "" {
		status = loop.StatusRunning
	}
	s.root.SetAttributes(attribute.String(attrStatus, string(status)), attribute.String(attrReason, string(reason)))
	if status == loop.StatusFailed || status == loop.StatusError {
		s.root.SetAttributes(attribute.String(attrErrorType, string(reason)))
		s.root.SetStatus(codes.Error, string(reason))
	}
	s.root.End(trace.WithTimestamp(at))
	s.root, s.ctx = nil, nil
}

// modelErrorType says what failed in a model call from its event alone:
// for a call this process did not make, whose transport's report it
// does not have. A provider's refusal is found in the error text, which
// names the status as "HTTP <code> from".
func modelErrorType(d *loop.ModelFailed) string {
	switch {
	case d.Timeout:
		return "timeout"
	case d.Malformed:
		return "invalid_response"
	}
	if i := strings.Index(d.Error, "HTTP "); i >= 0 && len(d.Error) >= i+8 {
		if code, err := strconv.Atoi(d.Error[i+5 : i+8]); err == nil && code >= 400 && code <= 599 && strings.HasPrefix(d.Error[i+8:], " from") {
			return statusErrorType(code)
		}
	}
	if d.Retryable {
		return "retryable"
	}
	return "_OTHER"
}

// statusErrorType is error.type for a provider's HTTP refusal:
// rate_limited for 429, http_<code> for the others.
func statusErrorType(code int) string {
	if code == 429 {
		return "rate_limited"
	}
	return "http_" + strconv.Itoa(code)
}

func toolErrorType(d *loop.ToolFinished) string {
	switch {
	case d.Refused:
		return "refused"
	case d.Unknown:
		return "unknown_tool"
	case d.Failed:
		return "failed"
	}
	return "tool_error"
}

func toolAttrs(d *loop.ToolFinished) []attribute.KeyValue {
	o := "ok"
	if d.IsError {
		o = toolErrorType(d)
	}
	return []attribute.KeyValue{attribute.String(attrToolName, d.Name), outcome(o)}
}

func stopAttrs(st loop.Status, r loop.StopReason) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(attrStatus, string(st)), attribute.String(attrReason, string(r))}
}

func outcome(o string) attribute.KeyValue   { return attribute.String(attrOutcome, o) }
func tokenType(t string) attribute.KeyValue { return attribute.String(attrTokenType, t) }
func errorType(t string) attribute.KeyValue { return attribute.String(attrErrorType, t) }

func withAttrs(a []attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(a...))
}
