package toolcall

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
)

var testTools = []model.ToolSpec{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{
		"city":{"type":"string"},
		"days":{"type":"integer"},
		"ratio":{"type":"number"},
		"metric":{"type":"boolean"},
		"tags":{"type":"array","items":{"type":"string"}},
		"opts":{"type":"object"},
		"unit":{"anyOf":[{"type":"null"},{"type":"string"}]},
		"limit":{"type":["integer","null"]}}}`)},
	{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
	{Name: "read_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`)},
	{Name: "get_time"},
}

type parseCase struct {
	name       string
	in         string
	noTools    bool // parse without offering tools
	format     string
	calls      []string // "name {compact args}"
	content    string
	reasoning  string
	attempted  bool
	problem    string // substring of Problem
	unmatched  []string
	skipContnt bool // do not check content
}

func runCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Tools: testTools}
			if tc.noTools {
				opts = Options{}
			}
			r := Parse(tc.in, opts)
			checkInvariants(t, tc.in, opts, r)
			if r.Format != tc.format {
				t.Errorf("format = %q, want %q", r.Format, tc.format)
			}
			got := make([]string, len(r.Calls))
			for i, c := range r.Calls {
				got[i] = c.Name + " " + string(c.Arguments)
			}
			if strings.Join(got, "\n") != strings.Join(tc.calls, "\n") {
				t.Errorf("calls:\n got %q\nwant %q", got, tc.calls)
			}
			if !tc.skipContnt && r.Content != tc.content {
				t.Errorf("content = %q, want %q", r.Content, tc.content)
			}
			if r.Reasoning != tc.reasoning {
				t.Errorf("reasoning = %q, want %q", r.Reasoning, tc.reasoning)
			}
			if r.Attempted != tc.attempted {
				t.Errorf("attempted = %v, want %v (problem %q)", r.Attempted, tc.attempted, r.Problem)
			}
			if !strings.Contains(r.Problem, tc.problem) {
				t.Errorf("problem = %q, want it to contain %q", r.Problem, tc.problem)
			}
			var um []string
			for _, c := range r.Unmatched {
				um = append(um, c.Name+" "+string(c.Arguments))
			}
			if strings.Join(um, "\n") != strings.Join(tc.unmatched, "\n") {
				t.Errorf("unmatched = %q, want %q", um, tc.unmatched)
			}
		})
	}
}

// checkInvariants holds for every input; the fuzzer checks it too.
func checkInvariants(t testing.TB, in string, opts Options, r Result) {
	t.Helper()
	known := map[string]bool{FormatNone: true, FormatJSON: true, FormatJSONFenced: true, FormatHermes: true,
		FormatQwen3Coder: true, FormatMistral: true, FormatMistralV11: true, FormatLlama3: true,
		FormatLlamaPythonTag: true, FormatPythonic: true, FormatDeepSeekV3: true, FormatDeepSeekV31: true, FormatHarmony: true,
		FormatKimiK2: true, FormatGLM45: true, FormatFunctionaryV32: true,
		FormatGranite: true, FormatJamba: true, FormatInternLM2: true, FormatPhi4Mini: true}
	if !known[r.Format] {
		t.Fatalf("unknown format %q for %q", r.Format, in)
	}
	if r.Attempted != (r.Problem != "") {
		t.Fatalf("attempted=%v but problem=%q for %q", r.Attempted, r.Problem, in)
	}
	if len(r.Calls) > 0 && r.Format == FormatNone {
		t.Fatalf("calls with format none for %q", in)
	}
	offered := map[string]bool{}
	for _, s := range opts.Tools {
		offered[s.Name] = true
	}
	for i, c := range r.Calls {
		if c.Name == "" || strings.TrimSpace(c.Name) != c.Name {
			t.Fatalf("call %d has name %q for %q", i, c.Name, in)
		}
		if len(opts.Tools) > 0 && !offered[c.Name] {
			t.Fatalf("call %d names %q, which is not offered, for %q", i, c.Name, in)
		}
		if want := "call_" + strconv.Itoa(i+1); c.ID != want {
			t.Fatalf("call %d has ID %q, want %q", i, c.ID, want)
		}
		if !json.Valid(c.Arguments) || len(c.Arguments) == 0 || c.Arguments[0] != '{' {
			t.Fatalf("call %d arguments %q are not a JSON object, for %q", i, c.Arguments, in)
		}
		var m map[string]any
		if err := json.Unmarshal(c.Arguments, &m); err != nil {
			t.Fatalf("call %d arguments %q: %v", i, c.Arguments, err)
		}
	}
	for i, c := range r.Unmatched {
		if c.Name == "" || !json.Valid(c.Arguments) {
			t.Fatalf("unmatched %d is %q %q", i, c.Name, c.Arguments)
		}
	}
	b, err := r.MarshalJSON()
	if err != nil || !json.Valid(b) {
		t.Fatalf("MarshalJSON = %q, %v", b, err)
	}
}

func TestJSON(t *testing.T) {
	runCases(t, []parseCase{
		{name: "bare object", in: `{"name": "get_weather", "arguments": {"city": "Paris"}}`,
			format: FormatJSON, calls: []string{`get_weather {"city":"Paris"}`}},
		{name: "text before and after", in: "Let me look that up.\n{\"name\": \"search\", \"arguments\": {\"query\": \"go\"}}\nOne moment.",
			format: FormatJSON, calls: []string{`search {"query":"go"}`}, content: "Let me look that up.\nOne moment."},
		{name: "arguments as string", in: `{"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}`,
			format: FormatJSON, calls: []string{`get_weather {"city":"Paris","days":2}`}},
		{name: "function wrapper", in: `{"type": "function", "function": {"name": "search", "arguments": "{\"query\":\"x\"}"}}`,
			format: FormatJSON, calls: []string{`search {"query":"x"}`}},
		{name: "tool args", in: `{"tool": "search", "args": {"query": "x"}}`,
			format: FormatJSON, calls: []string{`search {"query":"x"}`}},
		{name: "tool_name tool_input", in: `{"tool_name": "search", "tool_input": {"query": "x"}}`,
			format: FormatJSON, calls: []string{`search {"query":"x"}`}},
		{name: "action action_input", in: `{"action": "search", "action_input": {"query": "x"}}`,
			format: FormatJSON, calls: []string{`search {"query":"x"}`}},
		{name: "array of calls", in: `[{"name": "search", "arguments": {"query": "a"}}, {"name": "get_time", "arguments": {}}]`,
			format: FormatJSON, calls: []string{`search {"query":"a"}`, `get_time {}`}},
		{name: "tool_calls wrapper", in: `{"tool_calls": [{"id": "x", "type": "function", "function": {"name": "search", "arguments": "{\"query\": \"q\"}"}}]}`,
			format: FormatJSON, calls: []string{`search {"query":"q"}`}},
		{name: "null arguments", in: `{"name": "get_time", "arguments": null}`,
			format: FormatJSON, calls: []string{`get_time {}`}},
		{name: "name only for offered tool", in: `{"name": "get_time"}`,
			format: FormatJSON, calls: []string{`get_time {}`}},
		{name: "fenced json", in: "I'll check.\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n```\n",
			format: FormatJSONFenced, calls: []string{`get_weather {"city":"Oslo"}`}, content: "I'll check."},
		{name: "plain fence", in: "```\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n```",
			format: FormatJSONFenced, calls: []string{`get_weather {"city":"Oslo"}`}},
		{name: "fence closed on same line", in: "```json\n{\"name\": \"search\", \"arguments\": {\"query\": \"q\"}}```",
			format: FormatJSONFenced, calls: []string{`search {"query":"q"}`}},
		{name: "two fences", in: "```json\n{\"name\": \"search\", \"arguments\": {\"query\": \"a\"}}\n```\nand\n```json\n{\"name\": \"search\", \"arguments\": {\"query\": \"b\"}}\n```",
			format: FormatJSONFenced, calls: []string{`search {"query":"a"}`, `search {"query":"b"}`}, content: "and"},
		{name: "python-ish dict", in: `{'name': 'search', 'arguments': {'query': 'it\'s', 'n': None}}`,
			format: FormatJSON, calls: []string{`search {"query":"it's","n":null}`}},
		{name: "raw newline in string", in: "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\", \"content\": \"package a\nfunc A() {}\n\"}}",
			format: FormatJSON, calls: []string{`read_file {"path":"a.go","content":"package a\nfunc A() {}\n"}`}},
		{name: "trailing comma", in: `{"name": "search", "arguments": {"query": "x",},}`,
			format: FormatJSON, calls: []string{`search {"query":"x"}`}},
		{name: "truncated at end", in: `Calling: {"name": "search", "arguments": {"query": "x"}`,
			format: FormatJSON, calls: []string{`search {"query":"x"}`}, content: "Calling:"},
		{name: "name normalised", in: `{"name": "Read-File", "arguments": {"path": "x"}}`,
			format: FormatJSON, calls: []string{`read_file {"path":"x"}`}},
		{name: "functions prefix", in: `{"name": "functions.search", "arguments": {"query": "x"}}`,
			format: FormatJSON, calls: []string{`search {"query":"x"}`}},
		{name: "prose json not offered stays text", in: `For example {"name": "delete_all", "arguments": {}} would be bad.`,
			format: FormatJSON, content: `For example {"name": "delete_all", "arguments": {}} would be bad.`,
			unmatched: []string{`delete_all {}`}},
		{name: "whole message unknown tool", in: `{"name": "delete_all", "arguments": {}}`,
			format: FormatJSON, content: `{"name": "delete_all", "arguments": {}}`, attempted: true,
			problem:   `you called the tool "delete_all", which is not available; the available tools are "get_weather", "search"`,
			unmatched: []string{`delete_all {}`}},
		{name: "data object is not a call", in: `The user is {"name": "Alice", "age": 31}.`,
			format: FormatNone, content: `The user is {"name": "Alice", "age": 31}.`},
		{name: "data with args key and no tools", noTools: true, in: `Config: {"name": "web", "input": "port 80"}`,
			format: FormatNone, content: `Config: {"name": "web", "input": "port 80"}`},
		{name: "no tools accepts any name", noTools: true, in: `{"name": "anything", "arguments": {"a": 1}}`,
			format: FormatJSON, calls: []string{`anything {"a":1}`}},
		{name: "invalid fenced json naming tool", in: "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": Paris}}\n```",
			format: FormatJSONFenced, attempted: true, problem: "the JSON in your ```json block is not valid JSON at offset",
			content: "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": Paris}}\n```"},
		{name: "invalid fenced json not naming tool", in: "```json\n{\"foo\": bar}\n```",
			format: FormatNone, content: "```json\n{\"foo\": bar}\n```"},
		{name: "arguments string not json", in: `{"name": "search", "arguments": "go generics"}`,
			format: FormatJSON, attempted: true, problem: `the arguments of your call to "search" are a string, not a JSON object`,
			content: `{"name": "search", "arguments": "go generics"}`},
		{name: "brace soup", in: `{{{{ "name" }}}} and [[[ ]]]`, format: FormatNone, content: `{{{{ "name" }}}} and [[[ ]]]`},
		{name: "prose with braces then call", in: "use {x} here\n{\"name\": \"get_time\", \"arguments\": {}}",
			format: FormatJSON, calls: []string{`get_time {}`}, content: "use {x} here"},
		{name: "unclosed outer containing call", in: `{ "wrapper": {"name": "get_time", "arguments": {}}`,
			format: FormatJSON, calls: []string{`get_time {}`}, content: `{ "wrapper":`},
	})
}

func TestLlama3(t *testing.T) {
	runCases(t, []parseCase{
		{name: "name parameters", in: `{"name": "get_weather", "parameters": {"city": "Paris"}}`,
			format: FormatLlama3, calls: []string{`get_weather {"city":"Paris"}`}},
		{name: "type function", in: `{"type": "function", "name": "search", "parameters": {"query": "x"}}`,
			format: FormatLlama3, calls: []string{`search {"query":"x"}`}},
		{name: "semicolon separated", in: `{"name": "search", "parameters": {"query": "a"}}; {"name": "get_time", "parameters": {}}`,
			format: FormatLlama3, calls: []string{`search {"query":"a"}`, `get_time {}`}, content: ";"},
		{name: "python tag", in: `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>`,
			format: FormatLlamaPythonTag, calls: []string{`get_weather {"city":"Paris"}`}},
		{name: "python tag with text before", in: "Checking.<|python_tag|>{\"name\": \"search\", \"parameters\": {\"query\": \"x\"}}",
			format: FormatLlamaPythonTag, calls: []string{`search {"query":"x"}`}, content: "Checking."},
		{name: "python tag two calls", in: `<|python_tag|>{"name": "search", "parameters": {"query": "x"}}; {"name": "get_time", "parameters": {}}<|eot_id|>`,
			format: FormatLlamaPythonTag, calls: []string{`search {"query":"x"}`, `get_time {}`}},
		{name: "python tag builtin", noTools: true, in: `<|python_tag|>brave_search.call(query="weather in Paris")<|eom_id|>`,
			format: FormatLlamaPythonTag, calls: []string{`brave_search {"query":"weather in Paris"}`}},
		{name: "python tag garbage", in: `<|python_tag|>!!!`,
			format: FormatLlamaPythonTag, attempted: true, problem: "<|python_tag|> is followed by", content: "<|python_tag|>!!!"},
	})
}

func TestHermes(t *testing.T) {
	runCases(t, []parseCase{
		{name: "single", in: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			format: FormatHermes, calls: []string{`get_weather {"city":"Paris"}`}},
		{name: "text before, two calls", in: "Sure, checking both.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"a\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"b\"}}\n</tool_call>",
			format: FormatHermes, calls: []string{`search {"query":"a"}`, `search {"query":"b"}`}, content: "Sure, checking both."},
		{name: "last unclosed", in: "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"a\"}}</tool_call><tool_call>{\"name\": \"get_time\", \"arguments\": {}}",
			format: FormatHermes, calls: []string{`search {"query":"a"}`, `get_time {}`}},
		{name: "first unclosed then another", in: "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"a\"}}\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
			format: FormatHermes, calls: []string{`search {"query":"a"}`, `get_time {}`}},
		{name: "arguments as string", in: `<tool_call>{"name": "search", "arguments": "{\"query\": \"a\"}"}</tool_call>`,
			format: FormatHermes, calls: []string{`search {"query":"a"}`}},
		{name: "missing final brace", in: `<tool_call>{"name": "search", "arguments": {"query": "a"}</tool_call>`,
			format: FormatHermes, calls: []string{`search {"query":"a"}`}},
		{name: "prose mention", in: "I will use the <tool_call> tag to call tools.",
			format: FormatNone, content: "I will use the <tool_call> tag to call tools."},
		{name: "prose mention then real call", in: "The <tool_call> tag wraps calls.\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
			format: FormatHermes, calls: []string{`get_time {}`}, content: "The <tool_call> tag wraps calls."},
		{name: "broken json unclosed", in: "Let me see.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": Paris",
			format: FormatHermes, attempted: true, problem: "your <tool_call> block is not valid JSON at offset 47",
			content: "Let me see.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": Paris"},
		{name: "no name", in: `<tool_call>{"city": "Paris"}</tool_call>`,
			format: FormatHermes, attempted: true, problem: "without a tool name", content: `<tool_call>{"city": "Paris"}</tool_call>`},
		{name: "unknown tool", in: `<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`,
			format: FormatHermes, attempted: true, problem: `you called the tool "rm_rf", which is not available`,
			content: `<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`, unmatched: []string{`rm_rf {}`}},
		{name: "one good one unknown", in: `<tool_call>{"name": "get_time", "arguments": {}}</tool_call><tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`,
			format: FormatHermes, calls: []string{`get_time {}`}, attempted: true, problem: `"rm_rf"`,
			content: `<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`, unmatched: []string{`rm_rf {}`}},
		{name: "case-insensitive name", in: `<tool_call>{"name": "GET_WEATHER", "arguments": {"city": "x"}}</tool_call>`,
			format: FormatHermes, calls: []string{`get_weather {"city":"x"}`}},
		{name: "think block is reasoning", in: "<think>\nI could call <tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>.\n</think>\n\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
			format: FormatHermes, calls: []string{`get_time {}`}, reasoning: "I could call <tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>."},
		{name: "think closer only", in: "thinking here</think>The answer is 4.",
			format: FormatNone, content: "The answer is 4.", reasoning: "thinking here"},
	})
}

func TestQwen3Coder(t *testing.T) {
	runCases(t, []parseCase{
		{name: "typed coercion", in: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=ratio>\n0.5\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n<parameter=opts>\n{'deep': True}\n</parameter>\n<parameter=unit>\nnull\n</parameter>\n<parameter=limit>\nnull\n</parameter>\n</function>\n</tool_call>",
			format: FormatQwen3Coder, calls: []string{`get_weather {"city":"Paris","days":3,"ratio":0.5,"metric":true,"tags":["a","b"],"opts":{"deep":true},"unit":"null","limit":null}`}},
		{name: "string stays string", in: "<tool_call><function=search><parameter=query>42</parameter></function></tool_call>",
			format: FormatQwen3Coder, calls: []string{`search {"query":"42"}`}},
		{name: "bad integer stays string", in: "<tool_call><function=get_weather><parameter=days>three</parameter></function></tool_call>",
			format: FormatQwen3Coder, calls: []string{`get_weather {"days":"three"}`}},
		{name: "multiline content kept", in: "<tool_call>\n<function=read_file>\n<parameter=path>\na.go\n</parameter>\n<parameter=content>\npackage a\n\nfunc A() {}\n\n</parameter>\n</function>\n</tool_call>",
			format: FormatQwen3Coder, calls: []string{`read_file {"path":"a.go","content":"package a\n\nfunc A() {}\n"}`}},
		{name: "without outer tag and text before", in: "I'll search.\n<function=search>\n<parameter=query>\ngo fuzzing\n</parameter>\n</function>",
			format: FormatQwen3Coder, calls: []string{`search {"query":"go fuzzing"}`}, content: "I'll search."},
		{name: "two functions", in: "<tool_call>\n<function=search>\n<parameter=query>\na\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
			format: FormatQwen3Coder, calls: []string{`search {"query":"a"}`, `get_time {}`}},
		{name: "unclosed parameter before the next one and function closed", in: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n2\n</function></tool_call>",
			format: FormatQwen3Coder, calls: []string{`get_weather {"city":"Paris","days":2}`}},
		// a stream cut inside the last value: "2" may have been "20"
		{name: "unclosed parameter and function", in: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n2\n",
			format: FormatQwen3Coder, attempted: true, problem: "cut off inside the value of parameter \"days\"", skipContnt: true},
		{name: "no tools keeps strings", noTools: true, in: "<function=anything>\n<parameter=n>\n3\n</parameter>\n</function>",
			format: FormatQwen3Coder, calls: []string{`anything {"n":"3"}`}},
		{name: "prose function tag", in: "Write <function=NAME> to start a call.",
			format: FormatNone, content: "Write <function=NAME> to start a call."},
		{name: "json body", in: `<function=search>{"query": "x"}</function>`,
			format: FormatQwen3Coder, calls: []string{`search {"query":"x"}`}},
	})
}

func TestMistral(t *testing.T) {
	runCases(t, []parseCase{
		{name: "json list", in: `[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123xyz"}]`,
			format: FormatMistral, calls: []string{`get_weather {"city":"Paris"}`}},
		{name: "json list two calls text before", in: `Checking. [TOOL_CALLS][{"name": "search", "arguments": {"query": "a"}}, {"name": "get_time", "arguments": {}}]`,
			format: FormatMistral, calls: []string{`search {"query":"a"}`, `get_time {}`}, content: "Checking."},
		{name: "v11", in: `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}`,
			format: FormatMistralV11, calls: []string{`get_weather {"city":"Paris"}`}},
		{name: "v11 repeated", in: `[TOOL_CALLS]search[ARGS]{"query": "a"}[TOOL_CALLS]get_time[ARGS]{}`,
			format: FormatMistralV11, calls: []string{`search {"query":"a"}`, `get_time {}`}},
		{name: "v11 call id", in: `[TOOL_CALLS]search[CALL_ID]a1b2c3d4e[ARGS]{"query": "a"}`,
			format: FormatMistralV11, calls: []string{`search {"query":"a"}`}},
		{name: "garbage", in: `[TOOL_CALLS] ???`,
			format: FormatMistral, attempted: true, problem: "your [TOOL_CALLS] marker is followed by", content: `[TOOL_CALLS] ???`},
		{name: "nothing after marker", in: `[TOOL_CALLS]`,
			format: FormatMistral, attempted: true, problem: "followed by nothing", content: `[TOOL_CALLS]`},
		{name: "broken json", in: `[TOOL_CALLS][{"name": "search", "arguments": {"query": }}]`,
			format: FormatMistral, attempted: true, problem: "is not valid JSON at offset", content: `[TOOL_CALLS][{"name": "search", "arguments": {"query": }}]`},
		{name: "v11 missing args", in: `[TOOL_CALLS]search {"query": "x"}`,
			format: FormatMistralV11, attempted: true, problem: "without [ARGS]", content: `[TOOL_CALLS]search {"query": "x"}`},
	})
}

func TestPythonic(t *testing.T) {
	runCases(t, []parseCase{
		{name: "two calls", in: `[get_weather(city='Paris', days=3), search(query="x")]`,
			format: FormatPythonic, calls: []string{`get_weather {"city":"Paris","days":3}`, `search {"query":"x"}`}},
		{name: "literals", noTools: true, in: `[f(a=None, b=True, c=False, d=-1.5e3, e=[1, 'two', (3, 4)], g={'k': "v", 1: 2}, h='it\'s', i="""multi
line""", j=0x1f, k=1_000)]`,
			format: FormatPythonic, calls: []string{`f {"a":null,"b":true,"c":false,"d":-1.5e3,"e":[1,"two",[3,4]],"g":{"k":"v","1":2},"h":"it's","i":"multi\nline","j":31,"k":1000}`}},
		{name: "text before", in: "Let me check.\n[get_weather(city='Oslo')]",
			format: FormatPythonic, calls: []string{`get_weather {"city":"Oslo"}`}, content: "Let me check."},
		{name: "llama4 markers", in: `<|python_start|>[search(query='a')]<|python_end|>`,
			format: FormatPythonic, calls: []string{`search {"query":"a"}`}},
		{name: "no args", in: `[get_time()]`, format: FormatPythonic, calls: []string{`get_time {}`}},
		{name: "markdown link is not a call", noTools: true, in: `See [foo(bar)](http://x).`,
			format: FormatNone, content: `See [foo(bar)](http://x).`},
		{name: "mid-line without tools is text", noTools: true, in: `call it like [f(x=1)] please`,
			format: FormatNone, content: `call it like [f(x=1)] please`},
		{name: "unknown tool whole", in: `[rm(path='/')]`,
			format: FormatPythonic, attempted: true, problem: `"rm", which is not available`, content: `[rm(path='/')]`, unmatched: []string{`rm {"path":"/"}`}},
		{name: "positional whole", in: `[search('x')]`,
			format: FormatPythonic, attempted: true, problem: "takes only keyword arguments", content: `[search('x')]`},
		{name: "unclosed whole", in: `[search(query='x'`,
			format: FormatPythonic, attempted: true, problem: "never closed", content: `[search(query='x'`},
	})
}

func TestDeepSeek(t *testing.T) {
	runCases(t, []parseCase{
		{name: "v3", in: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			format: FormatDeepSeekV3, calls: []string{`get_weather {"city":"Paris"}`}},
		{name: "v3 two calls text before", in: "Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{\"query\": \"a\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			format: FormatDeepSeekV3, calls: []string{`search {"query":"a"}`, `get_time {}`}, content: "Sure."},
		{name: "v31", in: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{"query": "b"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
			format: FormatDeepSeekV31, calls: []string{`get_weather {"city":"Paris"}`, `search {"query":"b"}`}},
		{name: "v31 unclosed", in: `ok<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{"query": "b"`,
			format: FormatDeepSeekV31, calls: []string{`search {"query":"b"}`}, content: "ok"},
		{name: "broken", in: `<｜tool▁call▁begin｜>search<｜tool▁sep｜>{query: }<｜tool▁call▁end｜>`,
			format: FormatDeepSeekV31, attempted: true, problem: `the arguments of your call to "search" is not valid JSON`, skipContnt: true},
	})
}

func TestHarmony(t *testing.T) {
	runCases(t, []parseCase{
		{name: "analysis then call", in: `<|channel|>analysis<|message|>User wants weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>`,
			format: FormatHarmony, calls: []string{`get_weather {"city":"Paris"}`}, reasoning: "User wants weather."},
		{name: "recipient before channel", in: `<|start|>assistant to=functions.search<|channel|>commentary json<|message|>{"query": "x"}<|call|>`,
			format: FormatHarmony, calls: []string{`search {"query":"x"}`}},
		{name: "final kept", in: `<|start|>assistant<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>It is 4.<|return|>`,
			format: FormatHarmony, content: "It is 4.", reasoning: "Easy."},
		{name: "preamble and call", in: `<|channel|>commentary<|message|>Checking the weather now.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Rome"}<|call|>`,
			format: FormatHarmony, calls: []string{`get_weather {"city":"Rome"}`}, content: "Checking the weather now."},
		{name: "broken args", in: `<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"query": <|call|>`,
			format: FormatHarmony, attempted: true, problem: `the arguments of your call to "search"`},
		{name: "unknown tool", in: `<|channel|>commentary to=functions.rm <|constrain|>json<|message|>{}<|call|>`,
			format: FormatHarmony, attempted: true, problem: `"rm", which is not available`, unmatched: []string{`rm {}`}},
	})
}

func TestPlainText(t *testing.T) {
	runCases(t, []parseCase{
		{name: "empty", in: "", format: FormatNone},
		{name: "plain", in: "  The answer is 42.  ", format: FormatNone, content: "The answer is 42."},
		{name: "code in prose", in: "Use `map[string]int{}` and f(x) [1, 2].", format: FormatNone, content: "Use `map[string]int{}` and f(x) [1, 2]."},
	})
}

func TestMarshalJSON(t *testing.T) {
	r := Parse("Hi <b>.\n<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"a\"}}</tool_call>", Options{Tools: testTools})
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"calls":[{"name":"search","arguments":{"query":"a"}}],"content":"Hi <b>.","format":"hermes"}`
	if string(b) != want {
		t.Errorf("MarshalJSON = %s\nwant %s", b, want)
	}
	b, _ = Parse("hello", Options{}).MarshalJSON()
	if want := `{"calls":[],"content":"hello","format":"none"}`; string(b) != want {
		t.Errorf("MarshalJSON = %s, want %s", b, want)
	}
}

func TestMoreCases(t *testing.T) {
	runCases(t, []parseCase{
		{name: "harmony tokens in prose stay text", in: "Use <|channel|> and <|message|> tokens.",
			format: FormatNone, content: "Use <|channel|> and <|message|> tokens."},
		{name: "whole broken json naming tool", in: "  {\"name\": \"search\", \"arguments\": {\"query\": }}  ",
			format: FormatJSON, attempted: true, problem: "your JSON tool call is not valid JSON at offset",
			content: "{\"name\": \"search\", \"arguments\": {\"query\": }}"},
		{name: "broken json in prose is not an attempt", in: "like {\"name\": \"search\", oops} maybe",
			format: FormatNone, content: "like {\"name\": \"search\", oops} maybe"},
		{name: "many problems are capped", in: strings.Repeat("<tool_call>{\"name\": \"nope\", \"arguments\": {}}</tool_call>", 6),
			format: FormatHermes, attempted: true, problem: "(3 more problems like these.)", skipContnt: true,
			unmatched: strings.Split(strings.Repeat("nope {},", 6)[:len("nope {},")*6-1], ",")},
		{name: "arguments array", in: `<tool_call>{"name": "search", "arguments": ["x"]}</tool_call>`,
			format: FormatHermes, attempted: true, problem: `the arguments of your call to "search" are an array`, skipContnt: true},
		{name: "escapes", noTools: true, in: `[f(a='\x41\u00e9\ud83d\ude00\d', b="line\
cont", c='\'q\'')]`,
			format: FormatPythonic, calls: []string{`f {"a":"Aé\ud83d\ude00\\d","b":"linecont","c":"'q'"}`}},
		{name: "deeply nested args rejected, not crashed", noTools: true, in: "[f(a=" + strings.Repeat("[", 500) + strings.Repeat("]", 500) + ")]",
			format: FormatPythonic, attempted: true, problem: "nested more than 200 deep", skipContnt: true},
	})
}

func TestCoerce(t *testing.T) {
	p := &parser{}
	for _, tc := range []struct {
		raw   string
		types []string
		want  string
	}{
		{"3", []string{"integer"}, `3`},
		{" 3 ", []string{"integer"}, `3`},
		{"3.0", []string{"integer"}, `3`},
		{"010", []string{"integer"}, `10`},
		{"0x1f", []string{"integer"}, `31`},
		{"3.5", []string{"integer"}, `"3.5"`},
		{"2.5", []string{"number"}, `2.5`},
		{".5", []string{"number"}, `0.5`},
		{"NaN", []string{"number"}, `"NaN"`},
		{"TRUE", []string{"boolean"}, `true`},
		{"no", []string{"boolean"}, `"no"`},
		{`["a", 'b']`, []string{"array"}, `["a","b"]`},
		{`{"k": 1}`, []string{"object"}, `{"k": 1}`},
		{`{"k": 1}`, []string{"array"}, `"{\"k\": 1}"`},
		{"null", []string{"integer", "null"}, `null`},
		{"null", []string{"string", "null"}, `"null"`},
		{"5", []string{"string", "integer"}, `"5"`},
		{"5", nil, `"5"`},
		{"x\ty\"", nil, `"x\ty\""`},
		{"bad\xffutf8", nil, "\"bad\uFFFDutf8\""},
	} {
		if got := string(p.coerce(tc.raw, tc.types)); got != tc.want {
			t.Errorf("coerce(%q, %v) = %s, want %s", tc.raw, tc.types, got, tc.want)
		}
	}
}

func TestParseSchema(t *testing.T) {
	pt := parseSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":["string","null"]},"c":{"oneOf":[{"type":"boolean"},{"anyOf":[{"type":"array"}]}]},"d":{}}}`))
	want := map[string][]string{"a": {"integer"}, "b": {"string", "null"}, "c": {"boolean", "array"}, "d": nil}
	for k, v := range want {
		if strings.Join(pt[k], ",") != strings.Join(v, ",") {
			t.Errorf("%s: %v, want %v", k, pt[k], v)
		}
	}
	if parseSchema(json.RawMessage(`not json`)) != nil || parseSchema(nil) != nil {
		t.Error("bad schemas should yield no types")
	}
}
