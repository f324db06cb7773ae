package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentloop/agentloop/internal/memo"
	"github.com/agentloop/agentloop/internal/ownstack"
	"github.com/agentloop/agentloop/internal/schemaref"
	"github.com/agentloop/agentloop/model"
)

// ErrUnknownTool is returned (wrapped) for a call to a tool that is not registered.
var ErrUnknownTool = errors.New("unknown tool")

// ErrInvalidArguments is returned (wrapped) when arguments fail the schema.
var ErrInvalidArguments = errors.New("invalid tool arguments")

// Registry holds the tools offered to a session, with compiled schemas.
// It is safe for concurrent use after construction.
type Registry struct {
	tools map[string]entry
	order []string
	specs []model.ToolSpec
}

type entry struct {
	tool Tool
	compiled
}

// NewRegistry compiles each tool's schema once. Duplicate names and schemas
// that do not compile are errors.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]entry, len(tools))}
	for _, t := range tools {
		if err := r.add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// MustRegistry is NewRegistry that panics on error, for static tool sets.
func MustRegistry(tools ...Tool) *Registry {
	r, err := NewRegistry(tools...)
	if err != nil {
		panic(err)
	}
	return r
}

func (r *Registry) add(t Tool) error {
	spec := t.Spec()
	if spec.Name == "" {
		return errors.New("tool has an empty name")
	}
	if _, dup := r.tools[spec.Name]; dup {
		return fmt.Errorf("tool %q registered twice", spec.Name)
	}
	c, err := compile(spec.Name, spec.Parameters)
	if err != nil {
		return err
	}
	if len(spec.Parameters) == 0 {
		spec.Parameters = anyObject
	}
	r.tools[spec.Name] = entry{tool: t, compiled: c}
	r.order = append(r.order, spec.Name)
	r.specs = append(r.specs, spec)
	return nil
}

// compiledSchemas keeps the schemas registries compiled, by tool name and
// schema text. A session's tools are built anew for every session (and,
// on a workflow engine, for every step), and compiling a schema, which
// checks it against the JSON Schema metaschema, costs more than all the
// rest of a session's start. Compiled schemas are never modified, so
// registries share them. A server's sessions are offered tens of distinct
// tools, not hundreds; a compiled schema is a few kilobytes.
var compiledSchemas = memo.New[compiled](256)

// compiled is a schema's compiled forms. schema is nil for a tool that
// declares none (any arguments do); fast is nil when the schema is
// outside the fast subset.
type compiled struct {
	schema *jsonschema.Schema
	fast   *fastSchema
}

// anyObject is the parameters a tool that declares none is offered with.
var anyObject = json.RawMessage(`{"type":"object","properties":{}}`)

// compile returns the compiled forms of tool name's schema raw.
func compile(name string, raw json.RawMessage) (compiled, error) {
	return compiledSchemas.Get(name+"\x00"+string(raw), func() (compiled, error) {
		schema, err := compileSchema(name, raw)
		if err != nil {
			return compiled{}, err
		}
		if len(raw) == 0 {
			raw = anyObject
		}
		return compiled{schema: schema, fast: compileFast(raw)}, nil
	})
}

func compileSchema(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("tool %q: schema is not valid JSON: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(schemaref.Refused("tool schemas"))
	url := "tool://" + name + "/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("tool %q: schema: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("tool %q: schema does not compile: %w", name, err)
	}
	return s, nil
}

// Specs returns the tool specs in registration order.
func (r *Registry) Specs() []model.ToolSpec {
	if r == nil {
		return nil
	}
	return r.specs
}

// Names returns the tool names in registration order.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	return r.order
}

// Lookup returns the tool with the given name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	if r == nil {
		return nil, false
	}
	e, ok := r.tools[name]
	return e.tool, ok
}

// Validate checks arguments against the tool's schema. The error text is
// written for the model: it says which tool, what is wrong and where.
func (r *Registry) Validate(name string, args json.RawMessage) error {
	e, ok := r.lookupEntry(name)
	if !ok {
		return r.unknown(name)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	// Most calls' arguments are judged from their bytes; only the rest
	// are decoded, for the checks and the error message below, on a
	// stack of their own: the full validator recurses deeply, and this
	// runs on a session's goroutine (see internal/ownstack).
	if e.fast != nil && e.fast.validObject(args) {
		return nil
	}
	return ownstack.Do(func() error { return validateSlowly(e, name, args) })
}

// validateSlowly is Validate for arguments the fast check did not accept.
func validateSlowly(e entry, name string, args json.RawMessage) error {
	fast := e.fast
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return fmt.Errorf("%w: tool %q: arguments are not valid JSON (%v); send a JSON object matching the tool's schema", ErrInvalidArguments, name, err)
		}
		// Valid JSON with a number beyond float64: let the full validator,
		// which keeps numbers exact, judge it.
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(args)); err != nil {
			return fmt.Errorf("%w: tool %q: arguments are not valid JSON (%v); send a JSON object matching the tool's schema", ErrInvalidArguments, name, err)
		}
		fast = nil
	}
	if str, isStr := v.(string); isStr {
		if trimmed := bytes.TrimSpace([]byte(str)); len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) {
			return fmt.Errorf("%w: tool %q: arguments are a JSON object encoded as a string; send the object itself, not a string containing it", ErrInvalidArguments, name)
		}
		return fmt.Errorf("%w: tool %q: arguments must be a JSON object, but they are not valid JSON: %s", ErrInvalidArguments, name, shortJSON([]byte(str)))
	}
	if _, isObj := v.(map[string]any); !isObj {
		return fmt.Errorf("%w: tool %q: arguments must be a JSON object, got %s", ErrInvalidArguments, name, shortJSON(args))
	}
	if e.schema == nil || (fast != nil && fast.valid(v)) {
		return nil
	}
	if err := e.schema.Validate(v); err != nil {
		return fmt.Errorf("%w: tool %q: %s", ErrInvalidArguments, name, describeValidation(err))
	}
	return nil
}

func (r *Registry) lookupEntry(name string) (entry, bool) {
	if r == nil {
		return entry{}, false
	}
	e, ok := r.tools[name]
	return e, ok
}

func (r *Registry) unknown(name string) error {
	names := append([]string(nil), r.Names()...)
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Errorf("%w %q: no tools are available in this session", ErrUnknownTool, name)
	}
	return fmt.Errorf("%w %q: available tools are %s", ErrUnknownTool, name, strings.Join(names, ", "))
}

// Call validates the arguments and runs the tool. Unknown tools, invalid
// arguments and tool failures come back as an error Result the model can
// act on; the returned error is non-nil only when ctx was cancelled.
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage) Result {
	if err := r.Validate(name, args); err != nil {
		return Result{Output: err.Error(), IsError: true}
	}
	e, _ := r.lookupEntry(name)
	return Invoke(ctx, e.tool, args)
}

// Invoke runs a tool whose arguments were already validated, turning a
// returned error or a panic into an error Result.
func Invoke(ctx context.Context, t Tool, args json.RawMessage) Result {
	res, _ := Execute(ctx, t, args)
	return res
}

// Execute is Invoke that also returns the tool's error, for callers that
// act on its kind: a tool refused access (by the OS or by the workspace)
// returns an error matching fs.ErrPermission.
func Execute(ctx context.Context, t Tool, args json.RawMessage) (Result, error) {
	res, err := safeCall(ctx, t, args)
	if err != nil {
		msg := err.Error()
		if res.Output != "" {
			msg = res.Output + "\n" + msg
		}
		return Result{Output: "error: " + msg, IsError: true}, err
	}
	return res, nil
}

// safeCall runs the tool on the caller's goroutine — a session's — turning
// a panic into an error. Not on a stack of its own as deep validation is
// (see internal/ownstack): the hop costs some 10 µs of wake-ups between
// threads, as much as a quick tool itself; the built-in tools fit in a
// session's 8 KiB (loop's TestSessionStackStaysSmallWithBuiltinTools).
func safeCall(ctx context.Context, t Tool, args json.RawMessage) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool %q panicked: %v", t.Spec().Name, p)
		}
	}()
	return t.Call(ctx, args)
}

var englishPrinter = message.NewPrinter(language.English)

func describeValidation(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		var parts []string
		for _, leaf := range leaves(ve) {
			loc := "/" + strings.Join(leaf.InstanceLocation, "/")
			if loc == "/" {
				loc = "arguments"
			} else {
				loc = "argument " + strings.TrimPrefix(loc, "/")
			}
			parts = append(parts, loc+": "+leaf.ErrorKind.LocalizedString(englishPrinter))
		}
		if len(parts) > 0 {
			return strings.Join(parts, "; ")
		}
	}
	return err.Error()
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func shortJSON(b []byte) string {
	s := string(bytes.TrimSpace(b))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
