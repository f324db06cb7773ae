package telemetry

import (
	"context"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// LogHandler wraps h so that a log line can be followed to its session
// and its trace:
//
//   - a line about a session carries session_id: the lines that name it so
//     themselves, and a request's line (an attribute "path" under
//     /v1/sessions/ID), which gets it from the path;
//   - a line logged with a context holding a span carries that span's
//     trace_id and span_id; a line about a session, without one, carries
//     the session's trace id (SessionTraceID) while its spans are
//     exported, so its trace is found from the line.
//
// tracing says whether sessions' spans are exported (Telemetry.Tracing);
// it is asked at each line, so a logger may be made before telemetry is.
func LogHandler(h slog.Handler, tracing func() bool) slog.Handler {
	return &logHandler{h: h, tracing: tracing}
}

type logHandler struct {
	h       slog.Handler
	tracing func() bool
	session string // from WithAttrs
}

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	session, named := l.session, false
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "session_id":
			session, named = a.Value.String(), true
		case "path":
			if session == "" {
				session = sessionInPath(a.Value.String())
			}
		}
		return true
	})
	var add []slog.Attr
	if session != "" && !named && l.session == "" {
		add = append(add, slog.String("session_id", session))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		add = append(add, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	} else if session != "" && l.tracing != nil && l.tracing() {
		add = append(add, slog.String("trace_id", SessionTraceID(session).String()))
	}
	if len(add) > 0 {
		r = r.Clone()
		r.AddAttrs(add...)
	}
	return l.h.Handle(ctx, r)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *l
	for _, a := range attrs {
		if a.Key == "session_id" {
			n.session = a.Value.String()
		}
	}
	n.h = l.h.WithAttrs(attrs)
	return &n
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	n := *l
	n.h = l.h.WithGroup(name)
	return &n
}

// sessionInPath is the session a request path names (/v1/sessions/ID or
// below it), or "".
func sessionInPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/v1/sessions/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return id
}
