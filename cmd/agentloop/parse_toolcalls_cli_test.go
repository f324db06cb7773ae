package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parsed is what `agentloop parse-toolcalls` prints.
type parsed struct {
	Calls []struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"calls"`
	Content string `json:"content"`
	Format  string `json:"format"`
}

// TestParseToolCallsShowsEachIssue37Class runs one reply of each class of
// issue 37 through the built binary, with the tools given by --tools-file
// (schemas type the untyped values and pick the tool of a Kimi K2 call
// that names none) and --call-prefix where Ollama's rule applies.
func TestParseToolCallsShowsEachIssue37Class(t *testing.T) {
	c := newCLI(t)
	tools := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(tools, []byte(`[
		{"name": "read_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}, "follow": {"type": "boolean"}}}},
		{"name": "run_shell", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}
	]`), 0o644); err != nil {
		t.Fatal(err)
	}
	type want struct {
		format  string
		calls   string // name(args JSON) joined by ";"
		content string
		problem bool // stderr says the reply looks like a call that could not be read
	}
	cases := []struct {
		name, in, prefix string
		want             want
	}{
		{"mistral v11, text before, two calls", `Both.[TOOL_CALLS]read_file[ARGS]{"path": "a.go"}[TOOL_CALLS]run_shell[ARGS]{"command": "ls"}`, "",
			want{"mistral_v11", `read_file{"path":"a.go"};run_shell{"command":"ls"}`, "Both.", false}},
		{"mistral v11, second call cut inside a value", `[TOOL_CALLS]read_file[ARGS]{"path": "a.go"}[TOOL_CALLS]run_shell[ARGS]{"command": "l`, "",
			want{"mistral_v11", `read_file{"path":"a.go"}`, `[TOOL_CALLS]run_shell[ARGS]{"command": "l`, true}},
		{"qwen3-coder values typed by schema", "<tool_call>\n<function=read_file>\n<parameter = path>\na.go\n</parameter>\n<parameter name=\"limit\">\n 20 \n</parameter>\n<parameter=follow>\nTrue\n</parameter>\n</function>\n</tool_call>", "",
			want{"qwen3_coder", `read_file{"follow":true,"limit":20,"path":"a.go"}`, "", false}},
		{"qwen3-coder literal tags in a value", "<tool_call>\n<function=run_shell>\n<parameter=command>\necho '</parameter>' '</function>'\n</parameter>\n</function>\n</tool_call>", "",
			want{"qwen3_coder", `run_shell{"command":"echo '</parameter>' '</function>'"}`, "", false}},
		{"qwen3-coder value cut off", "<tool_call>\n<function=run_shell>\n<parameter=command>\nech", "",
			want{"qwen3_coder", ``, "<tool_call>\n<function=run_shell>\n<parameter=command>\nech", true}},
		{"ollama prefix: bare call after text is text", `Let me look. {"name": "read_file", "arguments": {"path": "a.go"}}`, "<tool_call>",
			want{"none", ``, `Let me look. {"name": "read_file", "arguments": {"path": "a.go"}}`, false}},
		{"ollama prefix: call behind the prefix after empty think", `<think></think><tool_call>{"name": "read_file", "arguments": {"path": "a.go"}}</tool_call>`, "<tool_call>",
			want{"hermes", `read_file{"path":"a.go"}`, "", false}},
		{"llama.cpp fenced call, closing fence cut off", "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}", "",
			want{"json_fenced", `read_file{"path":"a.go"}`, "", false}},
		{"functionary v3.2 text then a call", "Sure.>>>read_file\n{\"path\": \"a.go\"}", "",
			want{"functionary_v32", `read_file{"path":"a.go"}`, "Sure.", false}},
		{"harmony recipient in the role header", ` to=functions.read_file<|channel|>commentary <|constrain|>json<|message|>{"path": "a.go"}<|call|>`, "",
			want{"harmony", `read_file{"path":"a.go"}`, "", false}},
		{"kimi k2 counter id picks the tool the arguments fit", `Checking. <|tool_calls_section_begin|><|tool_call_begin|>0 <|tool_call_argument_begin|>{"command": "ls"}<|tool_call_end|><|tool_calls_section_end|>`, "",
			want{"kimi_k2", `run_shell{"command":"ls"}`, "Checking.", false}},
		{"kimi k2 arguments not JSON kept for the correction turn", `<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0 <|tool_call_argument_begin|>{"path": "a.go"<|tool_call_end|><|tool_call_begin|>functions.run_shell:1 <|tool_call_argument_begin|>{"command": "ls"}<|tool_call_end|><|tool_calls_section_end|>`, "",
			want{"kimi_k2", `run_shell{"command":"ls"}`, "", true}},
		{"glm-4.5 call without its closing tag", "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a.go</arg_value>\n<arg_key>limit</arg_key>\n<arg_value>5</arg_value>\n", "",
			want{"glm45", `read_file{"limit":5,"path":"a.go"}`, "", false}},
		{"hermes JSON missing its last brace", "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}\n</tool_call>", "",
			want{"hermes", `read_file{"path":"a.go"}`, "", false}},
	}
	for _, tc := range cases {
		args := []string{"parse-toolcalls", "--tools-file", tools}
		if tc.prefix != "" {
			args = append(args, "--call-prefix", tc.prefix)
		}
		out, errOut, code := c.run(tc.in, args...)
		var got parsed
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.name, code, out, errOut)
			continue
		}
		var calls []string
		for _, call := range got.Calls {
			var b strings.Builder
			enc := json.NewEncoder(&b) // sorted keys, markup as written
			enc.SetEscapeHTML(false)
			enc.Encode(call.Arguments)
			calls = append(calls, call.Name+strings.TrimSpace(b.String()))
		}
		if g := strings.Join(calls, ";"); g != tc.want.calls || got.Format != tc.want.format || got.Content != tc.want.content {
			t.Errorf("%s: format %s, calls %s, content %q; want %s, %s, %q", tc.name, got.Format, g, got.Content, tc.want.format, tc.want.calls, tc.want.content)
		}
		if problem := strings.Contains(errOut, "looks like a tool call that could not be read"); problem != tc.want.problem {
			t.Errorf("%s: stderr %q, want a problem reported: %v", tc.name, errOut, tc.want.problem)
		}
	}
}

// TestParseToolCallsRefusesBadInput: a broken --tools-file, a tool
// without a name and a stray argument are errors that say what to do.
func TestParseToolCallsRefusesBadInput(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	nameless := filepath.Join(dir, "nameless.json")
	os.WriteFile(broken, []byte(`{"name": "read_file"`), 0o644)
	os.WriteFile(nameless, []byte(`[{"parameters": {}}]`), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"parse-toolcalls", "--tools-file", broken}, exitFailed, "is not a JSON list of tools"},
		{[]string{"parse-toolcalls", "--tools-file", nameless}, exitFailed, "tool 1 has no name"},
		{[]string{"parse-toolcalls", "--tools-file", filepath.Join(dir, "missing.json")}, exitFailed, "reading --tools-file"},
		{[]string{"parse-toolcalls", "reply.txt"}, exitUsage, "reads the model output on stdin"},
	} {
		out, errOut, code := c.run("text", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
}
