package toolcall

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// referenceTools are the tools the reference parsers' own tests offer
// (llama.cpp's special_function and python, vLLM's Mistral and Qwen3-Coder
// fixtures, Ollama's weather tools), with the schemas those tests use.
var referenceTools = []model.ToolSpec{
	{Name: "special_function", Parameters: json.RawMessage(`{"type":"object","properties":{"arg1":{"type":"integer"}},"required":["arg1"]}`)},
	{Name: "special_function_with_opt", Parameters: json.RawMessage(`{"type":"object","properties":{"arg1":{"type":"integer"},"arg2":{"type":"integer"}},"required":["arg1"]}`)},
	{Name: "python", Parameters: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`)},
	{Name: "code_interpreter", Parameters: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`)},
	{Name: "add", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`)},
	{Name: "get_current_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"state":{"type":"string"},"unit":{"type":"string","enum":["fahrenheit","celsius"]}},"required":["city","state"]}`)},
	{Name: "get_age", Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
	{Name: "calculate_area", Parameters: json.RawMessage(`{"type":"object","properties":{"shape":{"type":"string"},"dimensions":{"type":"object"},"precision":{"type":"integer"}}}`)},
	{Name: "test_types", Parameters: json.RawMessage(`{"type":"object","properties":{"int_param":{"type":"integer"},"float_param":{"type":"float"},"bool_param":{"type":"boolean"},"str_param":{"type":"string"},"obj_param":{"type":"object"}}}`)},
	{Name: "get_conditions", Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}}}`)},
	{Name: "get_temperature", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"format":{"type":"string"}}}`)},
	{Name: "say_hello", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

type referenceSample struct {
	heldoutSample
	Source     string `json:"source"`
	CallPrefix string `json:"call_prefix"`
	// Tools, when set, replace referenceTools (the reference test offers
	// its own, e.g. vLLM's Kimi K2 bare-counter cases).
	Tools []model.ToolSpec `json:"tools"`
	// Attempted, when set, is the Result.Attempted the sample must give:
	// true where the reference keeps a broken call for the correction
	// turn (arguments that are not JSON, a value cut off mid-stream).
	Attempted *bool `json:"attempted"`
	// Content, when set, is the Result.Content the sample must give.
	Content *string `json:"content"`
}

// referenceMismatch adds the sample's Attempted and Content checks to
// heldoutMismatch.
func referenceMismatch(s referenceSample, r Result) string {
	if why := heldoutMismatch(s.heldoutSample, r); why != "" {
		return why
	}
	if s.Attempted != nil && r.Attempted != *s.Attempted {
		return fmt.Sprintf("attempted = %v (problem %q), want %v", r.Attempted, r.Problem, *s.Attempted)
	}
	if s.Content != nil && r.Content != *s.Content {
		return fmt.Sprintf("content = %q, want %q", r.Content, *s.Content)
	}
	return ""
}

// TestReferenceCorpus parses testdata/reference.json: model outputs taken
// from the reference parsers' own tests (vLLM's tests/tool_use, llama.cpp's
// tests/test-chat.cpp, Ollama's tools/tools_test.go; each sample names its
// source) with what those parsers return. Where our result differs from
// the reference's on purpose (a broken call kept as an attempt with a
// Problem instead of a call with invalid arguments), the sample's note
// says so. It logs the rate per family and overall
// (go test ./toolcall -run TestReferenceCorpus -v) and requires every
// sample to match.
func TestReferenceCorpus(t *testing.T) {
	raw, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var samples []referenceSample
	if err := json.Unmarshal(raw, &samples); err != nil {
		t.Fatal(err)
	}
	type tally struct{ ok, n int }
	per := map[string]*tally{}
	total := 0
	for i, s := range samples {
		opts := Options{Tools: referenceTools, CallPrefix: s.CallPrefix}
		if s.Tools != nil {
			opts.Tools = s.Tools
		}
		r := Parse(s.Text, opts)
		checkInvariants(t, s.Text, opts, r)
		f := per[s.Family]
		if f == nil {
			f = &tally{}
			per[s.Family] = f
		}
		f.n++
		if why := referenceMismatch(s, r); why != "" {
			t.Errorf("sample %d (%s: %s; from %s): %s\n  text: %q", i, s.Family, s.Note, s.Source, why, s.Text)
			continue
		}
		f.ok++
		total++
	}
	names := make([]string, 0, len(per))
	for k := range per {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.Logf("%-18s %2d/%-2d", k, per[k].ok, per[k].n)
	}
	t.Logf("reference corpus: %d/%d = %.1f%%", total, len(samples), 100*float64(total)/float64(len(samples)))
}
