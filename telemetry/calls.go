package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// A session's spans all belong to one trace whose id is made from the
// session's id (SessionTraceID): the spans one process makes from the log,
// the spans another process makes after it resumes the session, and the
// traceparent its model calls send to the provider all name the same
// trace, without any of them having to tell the others.
//
// A model call's span is made from the log after the call (Observe), but
// the provider must hear of that span during the call. Resolver wraps
// each session's model so that a call runs with the span's context
// already chosen: the transport sends it as traceparent and reports on it
// (server.address, the status, what failed), and when the call's event is
// traced, its span takes that id and those attributes. Calls are handed
// over in the order they were made, one queue per session (a call for a
// conversation's summary, which has no span, is taken off at its
// conversation.condensed); a call whose event this process never traces
// (it stopped first) is dropped with the session's queue when the
// session stops running here.

// SessionTraceID is the trace id of every span of session id: the first 16
// bytes of SHA-256 of "agentloop session " + id.
func SessionTraceID(id string) trace.TraceID {
	sum := sha256.Sum256([]byte("agentloop session " + id))
	var t trace.TraceID
	copy(t[:], sum[:16])
	return t
}

// ids makes span ids: the ones a context asks for (wantIDs), random ones
// otherwise. It is the tracer provider's IDGenerator.
type ids struct{}

type wantKey struct{}

type wantIDs struct {
	trace trace.TraceID
	span  trace.SpanID // zero: random
}

func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, wantKey{}, wantIDs{trace: t, span: s})
}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	w, _ := ctx.Value(wantKey{}).(wantIDs)
	t := w.trace
	for !t.IsValid() {
		binary.NativeEndian.PutUint64(t[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t, spanID(w.span)
}

func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	w, _ := ctx.Value(wantKey{}).(wantIDs)
	return spanID(w.span)
}

func spanID(want trace.SpanID) trace.SpanID {
	for !want.IsValid() {
		binary.NativeEndian.PutUint64(want[:], rand.Uint64())
	}
	return want
}

// call is what the wrapped model learned of one call, for its span.
type call struct {
	span  trace.SpanID
	attrs []attribute.KeyValue
}

// calls are the model calls made but not yet traced, per session.
type calls struct {
	mu sync.Mutex
	q  map[string][]call
}

// maxQueued bounds a session's queue: a session whose events are not
// traced here (another store than the one observed) cannot grow it.
const maxQueued = 64

func (c *calls) push(session string, k call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.q == nil {
		c.q = map[string][]call{}
	}
	q := c.q[session]
	if len(q) >= maxQueued {
		q = q[1:]
	}
	c.q[session] = append(q, k)
}

func (c *calls) pop(session string) (call, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.q[session]
	if len(q) == 0 {
		return call{}, false
	}
	k := q[0]
	if len(q) == 1 {
		delete(c.q, session)
	} else {
		c.q[session] = q[1:]
	}
	return k, true
}

// drop forgets a session's queued calls, its tools' as well.
func (c *calls) drop(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.q {
		if k == session || strings.HasPrefix(k, session+"\x00") {
			delete(c.q, k)
		}
	}
}

// Resolver wraps resolve so that each session's model calls (and the
// fallback models it switches to) run inside the session's trace: an HTTP
// provider is sent a traceparent naming the call's span, which Observe
// exports with what the call reported (server.address,
// gen_ai.response.model, error.type). Without tracing it returns resolve.
func (t *Telemetry) Resolver(resolve loop.Resolver) loop.Resolver {
	if t.tracer == nil || resolve == nil {
		return resolve
	}
	return func(ctx context.Context, spec *loop.SessionStarted, st *loop.State) (*loop.Env, error) {
		env, err := resolve(ctx, spec, st)
		if err != nil || env == nil {
			return env, err
		}
		id := st.ID
		if env.Model != nil {
			env.Model = &tracedModel{t: t, session: id, m: env.Model}
		}
		if sw := env.SwitchModel; sw != nil {
			env.SwitchModel = func(spec string) (model.Model, error) {
				m, err := sw(spec)
				if err != nil || m == nil {
					return m, err
				}
				return &tracedModel{t: t, session: id, m: m}, nil
			}
		}
		if env.Tools != nil {
			env.Tools = tracedTools(t, id, env.Tools)
		}
		return env, nil
	}
}

// remoteTool is a tool that calls a server over the network (an MCP
// server's tool): its calls carry the session's trace context.
type remoteTool interface {
	tool.Tool
	ServerName() string
}

// tracedTools is reg with each remote tool wrapped so that its calls run
// with a span context of the session's trace, which its transport sends
// on (see tool/mcp); the tool span made from the call's tool.finished
// takes its id. reg itself is returned when it holds no remote tool.
func tracedTools(t *Telemetry, session string, reg *tool.Registry) *tool.Registry {
	names := reg.Names()
	tools := make([]tool.Tool, 0, len(names))
	wrapped := false
	for _, name := range names {
		tl, _ := reg.Lookup(name)
		if r, ok := tl.(remoteTool); ok {
			tl, wrapped = &tracedTool{remoteTool: r, t: t, session: session, name: name}, true
		}
		tools = append(tools, tl)
	}
	if !wrapped {
		return reg
	}
	out, err := tool.NewRegistry(tools...)
	if err != nil {
		return reg // the same tools made reg: only the untraced one is safe to offer
	}
	return out
}

type tracedTool struct {
	remoteTool
	t       *Telemetry
	session string
	name    string
}

func (w *tracedTool) Idempotent() bool    { return tool.IsIdempotent(w.remoteTool) }
func (w *tracedTool) Effect() tool.Effect { return tool.EffectOf(w.remoteTool) }

func (w *tracedTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: SessionTraceID(w.session), SpanID: spanID(trace.SpanID{}), TraceFlags: trace.FlagsSampled})
	res, err := w.remoteTool.Call(trace.ContextWithSpanContext(ctx, sc), args)
	w.t.calls.push(toolKey(w.session, w.name), call{span: sc.SpanID()})
	return res, err
}

// toolKey is the queue of a session's calls of one tool. Calls of the
// same tool that run at once may take each other's span ids; every span
// id is still used once.
func toolKey(session, name string) string { return session + "\x00" + name }

type tracedModel struct {
	t       *Telemetry
	session string
	m       model.Model
}

func (m *tracedModel) Generate(ctx context.Context, req *model.Request, stream model.StreamFunc) (*model.Response, error) {
	sp := &callSpan{Span: trace.SpanFromContext(context.Background()),
		sc: trace.NewSpanContext(trace.SpanContextConfig{TraceID: SessionTraceID(m.session), SpanID: spanID(trace.SpanID{}), TraceFlags: trace.FlagsSampled})}
	resp, err := m.m.Generate(trace.ContextWithSpan(ctx, sp), req, stream)
	sp.mu.Lock()
	attrs := sp.attrs
	sp.attrs = nil // the transport may not report after the call
	sp.mu.Unlock()
	if err != nil {
		attrs = append(attrs, errorType(callErrorType(ctx, err, attrs)))
	} else if resp != nil && resp.Model != "" {
		attrs = append(attrs, attribute.String(attrResponseModel, resp.Model))
	}
	m.t.calls.push(m.session, call{span: sp.sc.SpanID(), attrs: attrs})
	return resp, err
}

// callSpan stands for a model call's span while the call runs: it carries
// the span's context (for the traceparent) and keeps what the transport
// sets on it. It is never exported itself: the span made from the call's
// event is.
type callSpan struct {
	trace.Span // a non-recording span: every method callSpan does not define does nothing
	sc         trace.SpanContext
	mu         sync.Mutex
	attrs      []attribute.KeyValue
}

func (s *callSpan) SpanContext() trace.SpanContext { return s.sc }
func (s *callSpan) IsRecording() bool              { return true }

// SetAttributes keeps kv; a key set again keeps its last value.
func (s *callSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range kv {
		replaced := false
		for i := range s.attrs {
			if s.attrs[i].Key == a.Key {
				s.attrs[i], replaced = a, true
			}
		}
		if !replaced {
			s.attrs = append(s.attrs, a)
		}
	}
}

// callErrorType says what failed in a model call: what the transport
// reported (rate_limited, http_500, timeout, invalid_response,
// connection_failed, …), else what the error says of itself.
func callErrorType(ctx context.Context, err error, reported []attribute.KeyValue) string {
	for _, a := range reported {
		if a.Key == attrErrorType {
			return a.Value.AsString()
		}
	}
	switch {
	case errors.Is(err, model.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return "canceled"
	case errors.Is(err, model.ErrMalformed):
		return "invalid_response"
	case errors.Is(err, model.ErrModelUnavailable):
		return "model_unavailable"
	}
	return "_OTHER" // the conventions' value for a failure of no known kind
}
