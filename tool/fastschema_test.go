package tool

import (
	"bytes"
	"encoding/json"
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
		`{"tags":[]}`, `{"tags":["a",1]}`, `{"x":null,"o":{"k":true}}`, `{"o":{}}`, `{"s":"é"}`, `{"n":1e400}`, `{"n":9.0}`} {
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
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		lib, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(doc)))
		if err != nil {
			return
		}
		for i, p := range pairs {
			if p.fast.valid(v) && p.full.Validate(lib) != nil {
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
