package toolcall

import "testing"

func TestKimiK2(t *testing.T) {
	runCases(t, []parseCase{
		{name: "one call", in: "Checking.\n<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>",
			format: FormatKimiK2, calls: []string{`get_weather {"city":"Paris"}`}, content: "Checking."},
		{name: "two calls, no prefix", in: "<|tool_calls_section_begin|><|tool_call_begin|>search:0<|tool_call_argument_begin|>{\"query\": \"a\"}<|tool_call_end|><|tool_call_begin|>functions.read_file:1<|tool_call_argument_begin|>{\"path\": \"b\"}<|tool_call_end|><|tool_calls_section_end|>",
			format: FormatKimiK2, calls: []string{`search {"query":"a"}`, `read_file {"path":"b"}`}},
		{name: "cut mid-arguments closes braces", in: "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"",
			format: FormatKimiK2, calls: []string{`get_weather {"city":"Paris"}`}},
		{name: "no argument marker", in: "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0 {\"city\": \"x\"}<|tool_call_end|>",
			format: FormatKimiK2, attempted: true, problem: "<|tool_call_argument_begin|>", skipContnt: true},
		{name: "broken json", in: "<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{\"query\": }<|tool_call_end|>",
			format: FormatKimiK2, attempted: true, problem: `call to "search"`, skipContnt: true},
	})
}

func TestGLM45(t *testing.T) {
	runCases(t, []parseCase{
		{name: "typed values", in: "Sure.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n<arg_key>metric</arg_key>\n<arg_value>True</arg_value>\n<arg_key>opts</arg_key>\n<arg_value>{'a': [1, None]}</arg_value>\n</tool_call>",
			format: FormatGLM45, calls: []string{`get_weather {"city":"Paris","days":3,"metric":true,"opts":{"a":[1,null]}}`}, content: "Sure."},
		{name: "no arguments, two calls", in: "<tool_call>get_time</tool_call><tool_call>search<arg_key>query</arg_key><arg_value>x < y</arg_value></tool_call>",
			format: FormatGLM45, calls: []string{`get_time {}`, `search {"query":"x < y"}`}},
		{name: "unclosed value", in: "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>go",
			format: FormatGLM45, attempted: true, problem: "not closed", skipContnt: true},
		{name: "hermes body left to hermes", in: `<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>`,
			format: FormatHermes, calls: []string{`search {"query":"x"}`}},
		{name: "prose", in: "Put the name after <tool_call> and each argument in <arg_key> tags.",
			format: FormatNone, content: "Put the name after <tool_call> and each argument in <arg_key> tags."},
	})
}

func TestFunctionaryV32(t *testing.T) {
	runCases(t, []parseCase{
		{name: "all then call", in: ">>>all\nLet me check.\n>>>get_weather\n{\"city\": \"Oslo\"}",
			format: FormatFunctionaryV32, calls: []string{`get_weather {"city":"Oslo"}`}, content: "Let me check."},
		{name: "first recipient in the prompt", in: "search\n{\"query\": \"q\"}\n>>>read_file\n{\"path\": \"p\"}",
			format: FormatFunctionaryV32, calls: []string{`search {"query":"q"}`, `read_file {"path":"p"}`}},
		{name: "text only", in: ">>>all\nHello there.", format: FormatNone, content: ">>>all\nHello there."},
		{name: "python prompt is prose", in: ">>> print(1)\n1", format: FormatNone, content: ">>> print(1)\n1"},
		{name: "unknown first line is prose without tools", noTools: true, in: "search\n{\"query\": \"q\"}",
			format: FormatNone, content: "search\n{\"query\": \"q\"}"},
		{name: "broken json", in: ">>>search\n{\"query\": ",
			format: FormatFunctionaryV32, attempted: true, problem: `call to "search"`, skipContnt: true},
	})
}

// Qwen3-Coder values: only a </parameter> followed by the next parameter or
// the end of the function closes a value; a stream cut inside a value is
// reported, never guessed.
func TestQwen3CoderValues(t *testing.T) {
	runCases(t, []parseCase{
		{name: "literal close tag in value", in: "<tool_call>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n<parameter=content>\nx </parameter> y\n</parameter>\n</function>\n</tool_call>",
			format: FormatQwen3Coder, calls: []string{`read_file {"path":"a","content":"x </parameter> y"}`}},
		{name: "parameter look-alike in value", in: "<function=read_file>\n<parameter=content>\n<b><parameter=fake>no</b>\n</parameter>\n</function>",
			format: FormatQwen3Coder, calls: []string{`read_file {"content":"<b><parameter=fake>no</b>"}`}},
		{name: "python literals by schema", in: "<function=get_weather>\n<parameter=metric>\nFalse\n</parameter>\n<parameter=opts>\n{'k': 'v', 'n': None, 't': True}\n</parameter>\n<parameter=tags>\n['a', \"b\"]\n</parameter>\n</function>",
			format: FormatQwen3Coder, calls: []string{`get_weather {"metric":false,"opts":{"k":"v","n":null,"t":true},"tags":["a","b"]}`}},
		{name: "cut mid closing tag", in: "<tool_call>\n<function=search>\n<parameter=query>\nls\n</param",
			format: FormatQwen3Coder, attempted: true, problem: `cut off inside the value of parameter "query"`, skipContnt: true},
		{name: "cut mid value", in: "<tool_call>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n<parameter=content>\nhalf",
			format: FormatQwen3Coder, attempted: true, problem: `parameter "content"`, skipContnt: true},
	})
}

// JSON calls behind a family's marker: the markers leave Content and name
// the family.
func TestWrappedJSON(t *testing.T) {
	runCases(t, []parseCase{
		{name: "granite", in: "I will search.\n<|tool_call|>[{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}]",
			format: FormatGranite, calls: []string{`search {"query":"x"}`}, content: "I will search."},
		{name: "phi-4-mini closed", in: "<|tool_call|>{\"name\": \"get_time\", \"arguments\": {}}<|/tool_call|>",
			format: FormatPhi4Mini, calls: []string{`get_time {}`}, content: ""},
		{name: "phi-4-mini functools", in: "Let me check.\nfunctools[{\"name\": \"search\", \"arguments\": {\"query\": \"a\"}}, {\"name\": \"get_time\", \"arguments\": {}}]",
			format: FormatPhi4Mini, calls: []string{`search {"query":"a"}`, `get_time {}`}, content: "Let me check."},
		{name: "jamba", in: "Sure.\n<tool_calls>\n[{\"name\": \"search\", \"arguments\": {\"query\": \"a\"}}]\n</tool_calls>\nDone.",
			format: FormatJamba, calls: []string{`search {"query":"a"}`}, content: "Sure.\nDone."},
		{name: "internlm2", in: "First the weather.\n<|action_start|><|plugin|>\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"上海\"}}<|action_end|>",
			format: FormatInternLM2, calls: []string{`get_weather {"city":"上海"}`}, content: "First the weather."},
		{name: "hermes in tools and response wrappers", in: "<response>\n<tools>\n{\"name\": \"search\", \"arguments\": {\"query\": \"q\"}}\n</tools>\n</response>",
			format: FormatJSON, calls: []string{`search {"query":"q"}`}, content: ""},
		{name: "prose naming a marker", in: "functools is a module; <tool_calls> is Jamba's tag.",
			format: FormatNone, content: "functools is a module; <tool_calls> is Jamba's tag."},
	})
}

// Ollama's rule: with a template prefix, a bare JSON call after text is
// not a call; at the start, or behind the marker, it is.
func TestCallPrefix(t *testing.T) {
	call := `{"name": "search", "arguments": {"query": "x"}}`
	opts := Options{Tools: testTools, CallPrefix: "<tool_call>"}
	for _, tc := range []struct {
		in    string
		calls int
	}{
		{"Here is how you would call it: " + call, 0},
		{call, 1},
		{"  \n" + call, 1},
		{"Calling now.\n<tool_call>" + call + "</tool_call>", 1},
	} {
		r := Parse(tc.in, opts)
		checkInvariants(t, tc.in, opts, r)
		if len(r.Calls) != tc.calls {
			t.Errorf("Parse(%q) with prefix: %d calls, want %d", tc.in, len(r.Calls), tc.calls)
		}
		if tc.calls == 0 && r.Content != tc.in {
			t.Errorf("Parse(%q) with prefix: content %q, want the text unchanged", tc.in, r.Content)
		}
	}
	if r := Parse("Here is how you would call it: "+call, Options{Tools: testTools}); len(r.Calls) != 1 {
		t.Errorf("without a prefix the call after text is recognised: got %d calls", len(r.Calls))
	}
}
