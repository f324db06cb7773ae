package tool

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var fastSchemas = []string{
	`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9},"s":{"type":"string","minLength":1,"maxLength":3}},"required":["n"],"additionalProperties":false}`,
	`{"type":"object","properties":{"mode":{"enum":["a","b",1,true,null]},"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2}}}`,
	`{"type":"object","properties":{"x":{"type":["number","null"]},"o":{"type":"object","properties":{"k":{"type":"boolean"}},"required":["k"]}}}`,
}

// The fast path may only answer "valid" when the full validator agrees.
func FuzzFastSchemaAgrees(f *testing.F) {
	for _, seed := range []string{`{"n":3}`, `{"n":3.5}`, `{"n":0}`, `{"n":3,"s":"abcd"}`, `{"n":1,"x":1}`, `{"mode":"c"}`, `{"mode":1}`,
		`{"tags":[]}`, `{"tags":["a",1]}`, `{"x":null,"o":{"k":true}}`, `{"o":{}}`, `{"s":"é"}`, `{"n":1e400}`, `{"n":9.0}`,
		`{"n":3,"s":"a\u0062"}`, `{"n":3,"n":30}`, `{"n":-0}`, `{"n":01}`, `{"n":3} x`, ` {"n":3}  `, `{"mode":"\u0061"}`, `{"mode":1.0}`,
		`{"tags":["a","b","c"]}`, `{"o":{"k":true,"k":1}}`, `{"x":1e5}`, `{"x":-}`, `{"s":"\x"}`, `{"s":"\ud800"}`, "{\"s\":\"\xff\"}",
		`{"n":1234567890123456}`, `{"n":5,"o":{"k":true}}`, `[{"n":3}]`, `"{\"n\":3}"`, `{"n":3,}`, `{"n" 3}`} {
		f.Add(seed)
	}
	type pair struct {
		fast *fastSchema
		full *jsonschema.Schema
	}
	var pairs []pair
	for i, src := range fastSchemas {
		fs := compileFast(json.RawMessage(src))
		if fs == nil {
			f.Fatalf("schema %d not in the fast subset", i)
		}
		full, err := compileSchema("t", json.RawMessage(src))
		if err != nil {
			f.Fatal(err)
		}
		pairs = append(pairs, pair{fs, full})
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		decodeErr := json.Unmarshal([]byte(doc), &v)
		lib, libErr := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(doc)))
		for i, p := range pairs {
			// The bytes-only path answers "valid" only for an object the
			// full validator accepts.
			if p.fast.validObject([]byte(doc)) {
				// (encoding/json may fail on a number beyond float64, as
				// 1e400; Validate then decodes with the full validator's
				// exact numbers, as here.)
				if _, isObj := lib.(map[string]any); libErr != nil || !isObj || !json.Valid([]byte(doc)) {
					t.Fatalf("schema %d: validObject accepts %q, which is not a JSON object (%v)", i, doc, libErr)
				}
				if err := p.full.Validate(lib); err != nil {
					t.Fatalf("schema %d: validObject accepts %s, the full validator rejects it: %v", i, doc, err)
				}
			}
			if decodeErr == nil && libErr == nil && p.fast.valid(v) && p.full.Validate(lib) != nil {
				t.Fatalf("schema %d: fast path accepts %s, the full validator rejects it: %v", i, doc, p.full.Validate(lib))
			}
		}
	})
}

func TestFastSubset(t *testing.T) {
	for _, src := range []string{`{"type":"object","properties":{"a":{"pattern":"x"}}}`, `{"oneOf":[{"type":"string"}]}`, `{"$ref":"#/x"}`, `{"type":"object","additionalProperties":{"type":"string"}}`} {
		if compileFast(json.RawMessage(src)) != nil {
			t.Errorf("%s compiled into the fast subset", src)
		}
	}
}

// validObject must judge ordinary arguments itself, or Validate decodes
// every call's arguments again.
func TestValidObjectJudgesOrdinaryArguments(t *testing.T) {
	for _, c := range []struct {
		schema int
		doc    string
		want   bool
	}{
		{0, `{"n":3,"s":"ab"}`, true},
		{0, ` {"n" : 9 , "s":"héé"} `, true},
		{0, `{"n":3.5}`, false},     // not an integer
		{0, `{"n":10}`, false},      // above the maximum
		{0, `{"s":"a"}`, false},     // n is required
		{0, `{"n":3,"t":1}`, false}, // no other properties
		{0, `{"n":3,"s":"abcd"}`, false},
		{1, `{"mode":"b","tags":["x","y"]}`, true},
		{1, `{"mode":null,"other":{"deep":[1,2.5,"x",true]}}`, true},
		{1, `{"mode":"c"}`, false},
		{1, `{"tags":[]}`, false},
		{2, `{"x":-2.5e3,"o":{"k":false}}`, true},
		{2, `{"o":{"k":"yes"}}`, false},
		// Nested deeper than it follows: left to the full validator.
		{1, `{"other":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, false},
	} {
		fs := compileFast(json.RawMessage(fastSchemas[c.schema]))
		if got := fs.validObject([]byte(c.doc)); got != c.want {
			t.Errorf("schema %d, %s: validObject = %v, want %v", c.schema, c.doc, got, c.want)
		}
	}
}
