// Package tool defines what the loop can run on a model's behalf: the Tool
// interface, a Registry that validates arguments against each tool's JSON
// Schema (compiled once), and the hook tools use to report workspace changes.
package tool

import (
	"context"
	"encoding/json"

	"github.com/agentloop/agentloop/model"
)

// Tool is something a model can call.
type Tool interface {
	// Spec gives the name, a description written for models and the JSON
	// Schema of the arguments object.
	Spec() model.ToolSpec
	// Call runs the tool with arguments that already passed the schema.
	// A returned error is reported to the model as an error result.
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool produced.
type Result struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
	// Images are pictures the tool returned (an MCP server's screenshot);
	// Output describes them in words as well, for models without vision.
	Images []model.Image `json:"images,omitempty"`
}

// Idempotent is implemented by tools that are safe to run twice with the same
// arguments. After a crash, a call that started but never finished is re-run
// only when its tool says so.
type Idempotent interface {
	Idempotent() bool
}

// Effect classifies what a tool does, for approval policies.
type Effect string

const (
	EffectRead    Effect = "read"
	EffectWrite   Effect = "write"
	EffectExecute Effect = "execute"
)

// Effector is implemented by tools that declare their effect. Tools that do
// not are treated as EffectExecute (the most careful default).
type Effector interface {
	Effect() Effect
}

// IsIdempotent reports whether t declares itself idempotent.
func IsIdempotent(t Tool) bool {
	i, ok := t.(Idempotent)
	return ok && i.Idempotent()
}

// EffectOf returns the declared effect of t.
func EffectOf(t Tool) Effect {
	if e, ok := t.(Effector); ok {
		return e.Effect()
	}
	return EffectExecute
}

// Func builds a Tool from a spec and a function. Options declare what the
// loop may assume about it, such as MarkIdempotent.
func Func(spec model.ToolSpec, fn func(ctx context.Context, args json.RawMessage) (Result, error), opts ...FuncOption) Tool {
	t := funcTool{spec: spec, fn: fn}
	for _, o := range opts {
		o(&t)
	}
	return t
}

// FuncOption declares a property of a tool built by Func.
type FuncOption func(*funcTool)

// MarkIdempotent declares a Func tool idempotent (see Idempotent): running
// it twice with the same arguments has the same effect as running it once.
// After a crash, a call of it that started but never finished is run again
// instead of being reported to the model as maybe-done, and the loop may
// start it before the record that it started is durable.
func MarkIdempotent() FuncOption {
	return func(t *funcTool) { t.idempotent = true }
}

type funcTool struct {
	spec       model.ToolSpec
	fn         func(ctx context.Context, args json.RawMessage) (Result, error)
	idempotent bool
}

func (t funcTool) Spec() model.ToolSpec { return t.spec }
func (t funcTool) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	return t.fn(ctx, args)
}
func (t funcTool) Idempotent() bool { return t.idempotent }

// ModificationKind says how a file changed.
type ModificationKind string

const (
	Created ModificationKind = "created"
	Changed ModificationKind = "changed"
	Deleted ModificationKind = "deleted"
)

// Modification is one workspace change a tool made.
type Modification struct {
	Path string           `json:"path"`
	Kind ModificationKind `json:"kind"`
}

type reporterKey struct{}

// WithReporter returns a context whose tools report modifications to fn.
// The loop installs one for a session's tool calls; a report counts for
// the call running when it is made. It feeds the no-progress stop
// condition and the end-of-session report.
func WithReporter(ctx context.Context, fn func(Modification)) context.Context {
	return context.WithValue(ctx, reporterKey{}, fn)
}

// ReportModification tells the loop that the running tool changed the
// workspace. Without a reporter in ctx it does nothing.
func ReportModification(ctx context.Context, m Modification) {
	if fn, ok := ctx.Value(reporterKey{}).(func(Modification)); ok && fn != nil {
		fn(m)
	}
}
