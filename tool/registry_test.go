package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

func mk(name, schema string, fn func(context.Context, json.RawMessage) (tool.Result, error)) tool.Tool {
	if fn == nil {
		fn = func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Result{Output: "ok"}, nil }
	}
	return tool.Func(model.ToolSpec{Name: name, Parameters: json.RawMessage(schema)}, fn)
}

const schema = `{"type":"object","properties":{"n":{"type":"integer","minimum":1},"s":{"type":"string"}},"required":["n"],"additionalProperties":false}`

func TestNewRegistryErrors(t *testing.T) {
	tests := []struct {
		name  string
		tools []tool.Tool
		want  string
	}{
		{"duplicate", []tool.Tool{mk("a", schema, nil), mk("a", schema, nil)}, `tool "a" registered twice`},
		{"empty name", []tool.Tool{mk("", schema, nil)}, "empty name"},
		{"bad json", []tool.Tool{mk("a", `{"type":`, nil)}, `tool "a": schema is not valid JSON`},
		{"bad schema", []tool.Tool{mk("a", `{"type":"nonsense"}`, nil)}, `tool "a": schema does not compile`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tool.NewRegistry(tt.tools...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	r := tool.MustRegistry(mk("count", schema, nil), mk("free", "", nil))
	tests := []struct {
		tool, args string
		want       string // "" means valid
		sentinel   error
	}{
		{"count", `{"n":3}`, "", nil},
		{"count", `{"n":3,"s":"x"}`, "", nil},
		{"count", `{}`, "argument", tool.ErrInvalidArguments},
		{"count", `{"n":"3"}`, "argument n", tool.ErrInvalidArguments},
		{"count", `{"n":0}`, "argument n", tool.ErrInvalidArguments},
		{"count", `{"n":1,"extra":true}`, "additional", tool.ErrInvalidArguments},
		{"count", `[1]`, "must be a JSON object", tool.ErrInvalidArguments},
		{"count", `{"n":`, "not valid JSON", tool.ErrInvalidArguments},
		{"count", `"text"`, "not valid JSON: text", tool.ErrInvalidArguments},
		{"count", `"{\"n\":3}"`, "a JSON object encoded as a string; send the object itself", tool.ErrInvalidArguments},
		// Beyond float64, but valid JSON and an integer ≥ 1: judged exactly, not called invalid JSON.
		{"count", `{"n":1e400}`, "", nil},
		{"count", `{"n":-1e400}`, "argument n", tool.ErrInvalidArguments},
		{"count", `{"n":100000000000000000000000000}`, "", nil},
		{"free", `{"anything":1}`, "", nil},
		{"free", ``, "", nil},
		{"nope", `{}`, `unknown tool "nope": available tools are count, free`, tool.ErrUnknownTool},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			err := r.Validate(tt.tool, json.RawMessage(tt.args))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.sentinel) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestCallTurnsFailuresIntoResults(t *testing.T) {
	r := tool.MustRegistry(
		mk("boom", "", func(context.Context, json.RawMessage) (tool.Result, error) { panic("kaput") }),
		mk("err", "", func(context.Context, json.RawMessage) (tool.Result, error) {
			return tool.Result{Output: "partial"}, errors.New("disk full")
		}),
	)
	res := r.Call(t.Context(), "boom", nil)
	if !res.IsError || !strings.Contains(res.Output, `tool "boom" panicked: kaput`) {
		t.Fatalf("%+v", res)
	}
	res = r.Call(t.Context(), "err", nil)
	if !res.IsError || res.Output != "error: partial\ndisk full" {
		t.Fatalf("%+v", res)
	}
	res = r.Call(t.Context(), "none", nil)
	if !res.IsError || !strings.Contains(res.Output, "unknown tool") {
		t.Fatalf("%+v", res)
	}
	var nilReg *tool.Registry
	if err := nilReg.Validate("x", nil); err == nil || !strings.Contains(err.Error(), "no tools are available") {
		t.Fatalf("nil registry: %v", err)
	}
}

func TestReportModificationWithoutReporter(t *testing.T) {
	tool.ReportModification(context.Background(), tool.Modification{Path: "x"}) // must not panic
	var got []tool.Modification
	ctx := tool.WithReporter(context.Background(), func(m tool.Modification) { got = append(got, m) })
	tool.ReportModification(ctx, tool.Modification{Path: "a", Kind: tool.Created})
	if len(got) != 1 || got[0].Path != "a" {
		t.Fatalf("%+v", got)
	}
}

func BenchmarkValidate(b *testing.B) {
	r := tool.MustRegistry(mk("count", schema, nil))
	args := json.RawMessage(`{"n":3,"s":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Validate("count", args); err != nil {
			b.Fatal(err)
		}
	}
}

// Registries share what they compiled: a tool's schema is compiled once
// however many registries hold it, yet each tool is judged by its own
// schema, one that changed is compiled anew, and one that does not
// compile is refused every time.
func TestRegistriesShareCompiledSchemas(t *testing.T) {
	loose := `{"type":"object","properties":{"n":{"type":"string"}}}`
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				strict := tool.MustRegistry(mk("count", schema, nil))
				other := tool.MustRegistry(mk("count", loose, nil))
				if err := strict.Validate("count", json.RawMessage(`{"n":"3"}`)); !errors.Is(err, tool.ErrInvalidArguments) {
					t.Errorf("goroutine %d: the strict schema took a string: %v", i, err)
					return
				}
				if err := other.Validate("count", json.RawMessage(`{"n":"3"}`)); err != nil {
					t.Errorf("goroutine %d: the loose schema refused a string: %v", i, err)
					return
				}
				if _, err := tool.NewRegistry(mk("count", `{"type":"nonsense"}`, nil)); err == nil {
					t.Errorf("goroutine %d: a schema that does not compile was taken", i)
					return
				}
			}
		})
	}
	wg.Wait()
	a, b := tool.MustRegistry(mk("count", schema, nil)), tool.MustRegistry(mk("count", schema, nil))
	if tool.SchemaOf(a, "count") != tool.SchemaOf(b, "count") {
		t.Error("two registries compiled the same schema twice")
	}
	if c := tool.MustRegistry(mk("count", loose, nil)); tool.SchemaOf(c, "count") == tool.SchemaOf(a, "count") {
		t.Error("two schemas of one tool name share a compiled form")
	}
}

// A tool's schema is compiled from its own text: one that refers to a
// file on this machine is refused, not read.
func TestSchemasLoadNoOtherDocument(t *testing.T) {
	other := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(other, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := tool.NewRegistry(mk("peek", `{"$ref":"file://`+other+`"}`, nil))
	if err == nil || !strings.Contains(err.Error(), "may not refer to other documents") {
		t.Fatalf("a schema referring to a file: %v", err)
	}
}
