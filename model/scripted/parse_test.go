package scripted

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/model"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		json string
		want string // the whole error message
	}{
		{"empty file", ``, `x.json: empty file: want a JSON object with "steps"`},
		{"not an object", `[]`, `x.json: got a JSON array, want object`},
		{"syntax error names line and column", "{\n  \"steps\": [\n    {\"text\": \"a\",}\n  ]\n}",
			`x.json:3:18: invalid character '}' looking for beginning of object key string`},
		{"truncated", `{"steps": [{"text": "a"`, `x.json: unexpected end of file: the JSON is incomplete`},
		{"trailing data", `{"steps":[{"text":"a"}]} {}`, `x.json: unexpected data after the script object`},
		{"no steps field", `{"description":"d"}`, `x.json: no steps: a script needs at least one entry in "steps"`},
		{"empty steps", `{"steps":[]}`, `x.json: no steps: a script needs at least one entry in "steps"`},
		{"unknown top-level field", `{"steps":[{"text":"a"}],"loop":true}`, `x.json: unknown field "loop"`},
		{"negative stream_chunk", `{"stream_chunk":-1,"steps":[{"text":"a"}]}`, `x.json: stream_chunk must not be negative (got -1)`},
		{"unknown step field", `{"steps":[{"text":"a"},{"txt":"b"}]}`, `x.json: step 2: unknown field "txt"`},
		{"unknown nested field", `{"steps":[{"text":"a","expect":{"role":"user"}}]}`, `x.json: step 1: unknown field "role"`},
		{"unknown tool call field", `{"steps":[{"tool_calls":[{"name":"a","args":{}}]}]}`, `x.json: step 1: unknown field "args"`},
		{"wrong type", `{"steps":[{"text":"a","usage":{"input_tokens":"ten"}}]}`, `x.json: step 1: usage.input_tokens: got a JSON string, want integer`},
		{"step not an object", `{"steps":["hello"]}`, `x.json: step 1: got a JSON string, want object`},
		{"empty step", `{"steps":[{"text":"a"},{}]}`, `x.json: step 2: empty step: give "text", "tool_calls" or "error"`},
		{"delay only", `{"steps":[{"delay":"1s"}]}`, `x.json: step 1: empty step: give "text", "tool_calls" or "error"`},
		{"bad delay", `{"steps":[{"text":"a","delay":"5 parsecs"}]}`, `x.json: step 1: delay: invalid duration "5 parsecs": want a Go duration such as "50ms" or "2s"`},
		{"negative delay", `{"steps":[{"text":"a","delay":"-1s"}]}`, `x.json: step 1: delay: duration "-1s" must not be negative`},
		{"negative step stream_chunk", `{"steps":[{"text":"a","stream_chunk":-4}]}`, `x.json: step 1: stream_chunk must not be negative (got -4)`},
		{"arguments not an object", `{"steps":[{"text":"a"},{"tool_calls":[{"name":"read_file","arguments":"a.go"}]}]}`,
			`x.json: step 2: tool_calls[0]: arguments must be a JSON object (use raw_arguments to send anything else verbatim)`},
		{"arguments null", `{"steps":[{"tool_calls":[{"name":"a"},{"name":"b","arguments":null}]}]}`,
			`x.json: step 1: tool_calls[1]: arguments must be a JSON object (use raw_arguments to send anything else verbatim)`},
		{"arguments and raw_arguments", `{"steps":[{"tool_calls":[{"name":"a","arguments":{},"raw_arguments":"{"}]}]}`,
			`x.json: step 1: tool_calls[0]: give arguments or raw_arguments, not both`},
		{"tool call without name", `{"steps":[{"tool_calls":[{"arguments":{}}]}]}`, `x.json: step 1: tool_calls[0]: name is required`},
		{"duplicate tool call id", `{"steps":[{"tool_calls":[{"id":"c","name":"a"},{"id":"c","name":"b"}]}]}`, `x.json: step 1: tool_calls[1]: duplicate id "c"`},
		{"bad finish reason", `{"steps":[{"text":"a","finish_reason":"done"}]}`,
			`x.json: step 1: finish_reason must be one of stop, tool_calls, length, content_filter (got "done")`},
		{"negative usage", `{"steps":[{"text":"a","usage":{"output_tokens":-1}}]}`, `x.json: step 1: usage: token counts must not be negative`},
		{"bad error kind", `{"steps":[{"error":{"kind":"oops"}}]}`,
			`x.json: step 1: error: kind must be one of retryable, timeout, malformed, fatal (got "oops")`},
		{"missing error kind", `{"steps":[{"error":{"message":"x"}}]}`,
			`x.json: step 1: error: kind must be one of retryable, timeout, malformed, fatal (got "")`},
		{"bad status", `{"steps":[{"error":{"kind":"fatal","status":42}}]}`, `x.json: step 1: error: status must be an HTTP status code (got 42)`},
		{"bad retry_after", `{"steps":[{"error":{"kind":"retryable","retry_after":"soon"}}]}`,
			`x.json: step 1: error: retry_after: invalid duration "soon": want a Go duration such as "50ms" or "2s"`},
		{"retry_after on fatal", `{"steps":[{"error":{"kind":"fatal","retry_after":"1s"}}]}`,
			`x.json: step 1: error: retry_after is only allowed with kind retryable (kind is fatal)`},
		{"error step with text", `{"steps":[{"error":{"kind":"fatal"},"text":"a"}]}`, `x.json: step 1: an error step cannot also have text`},
		{"error step with tool calls", `{"steps":[{"error":{"kind":"fatal"},"tool_calls":[]}]}`, `x.json: step 1: an error step cannot also have tool_calls`},
		{"error step with usage", `{"steps":[{"error":{"kind":"fatal"},"usage":{}}]}`, `x.json: step 1: an error step cannot also have usage`},
		{"bad expected role", `{"steps":[{"text":"a","expect":{"last_message_role":"bot"}}]}`,
			`x.json: step 1: expect: last_message_role must be one of system, user, assistant, tool (got "bot")`},
		{"negative message count", `{"steps":[{"text":"a","expect":{"message_count":-2}}]}`, `x.json: step 1: expect: message_count must not be negative (got -2)`},
		{"empty tool name in expect", `{"steps":[{"text":"a","expect":{"tools_offered":["a",""]}}]}`, `x.json: step 1: expect: tools_offered[1] is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.json", []byte(tt.json))
			if err == nil {
				t.Fatalf("Parse succeeded with %d steps, want error %q", len(s.Steps), tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestLoadNamesFileAndStep(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.json")
	data := `{"steps":[{"text":"a"},{"tool_calls":[{"name":"read_file","arguments":[1]}]}]}`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := path + ": step 2: tool_calls[0]: arguments must be a JSON object"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Load error = %v, want prefix %q", err, want)
	}

	missing := filepath.Join(dir, "missing.json")
	_, err = Load(missing)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(missing) = %v, want a not-exist error naming %s", err, missing)
	}
}

func TestParseFullScript(t *testing.T) {
	const src = `{
  "description": "fix a failing Go test",
  "repeat": true,
  "stream_chunk": 3,
  "steps": [
    {"text": "Let me run the tests.", "tool_calls": [{"name": "execute_command", "arguments": {"command": "go test ./..."}}],
     "usage": {"input_tokens": 120, "output_tokens": 30}, "finish_reason": "tool_calls", "delay": "50ms", "stream_chunk": 5},
    {"error": {"kind": "retryable", "status": 429, "message": "rate limited", "retry_after": "2s"}, "delay": "1ms"},
    {"error": {"kind": "timeout", "message": "no first token"}},
    {"error": {"kind": "malformed"}},
    {"error": {"kind": "fatal", "status": 401, "message": "bad key"}},
    {"tool_calls": [{"id": "t1", "name": "read_file", "arguments": { "path" : "a.go" }}, {"name": "x", "raw_arguments": "{\"path\": "}]},
    {"text": "", "finish_reason": "length"},
    {"text": "All tests pass.", "finish_reason": "stop",
     "expect": {"last_message_role": "tool", "last_message_contains": "ok", "tools_offered": ["read_file"], "message_count": 5}}
  ]
}`
	s, err := Parse("full.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "full.json" || s.Description != "fix a failing Go test" || !s.Repeat || s.StreamChunk != 3 || len(s.Steps) != 8 {
		t.Fatalf("script header = %q %q %v %d, %d steps", s.Name, s.Description, s.Repeat, s.StreamChunk, len(s.Steps))
	}

	st := s.Steps[0]
	if st.Text != "Let me run the tests." || st.FinishReason != "tool_calls" || st.Delay != 50*time.Millisecond || st.StreamChunk != 5 {
		t.Errorf("step 1 = %+v", st)
	}
	if st.Usage == nil || *st.Usage != (model.Usage{InputTokens: 120, OutputTokens: 30}) {
		t.Errorf("step 1 usage = %+v", st.Usage)
	}
	if len(st.ToolCalls) != 1 || st.ToolCalls[0].Name != "execute_command" || string(st.ToolCalls[0].Arguments) != `{"command":"go test ./..."}` {
		t.Errorf("step 1 tool calls = %+v", st.ToolCalls)
	}

	var re *model.RetryableError
	if err := s.Steps[1].Err; !errors.As(err, &re) || re.RetryAfter != 2*time.Second || err.Error() != "HTTP 429: rate limited" || s.Steps[1].Delay != time.Millisecond {
		t.Errorf("step 2 error = %v (%#v)", err, err)
	}
	if err := s.Steps[2].Err; !errors.Is(err, model.ErrTimeout) || !strings.HasPrefix(err.Error(), "no first token") {
		t.Errorf("step 3 error = %v", err)
	}
	if err := s.Steps[3].Err; !errors.Is(err, model.ErrMalformed) || !strings.HasPrefix(err.Error(), "scripted malformed error") {
		t.Errorf("step 4 error = %v", err)
	}
	if err := s.Steps[4].Err; err == nil || err.Error() != "HTTP 401: bad key" ||
		errors.Is(err, model.ErrRetryable) || errors.Is(err, model.ErrTimeout) || errors.Is(err, model.ErrMalformed) {
		t.Errorf("step 5 error = %v", err)
	}

	calls := s.Steps[5].ToolCalls
	if len(calls) != 2 || calls[0].ID != "t1" || string(calls[0].Arguments) != `{"path":"a.go"}` ||
		calls[1].ID != "" || string(calls[1].Arguments) != `{"path": ` {
		t.Errorf("step 6 tool calls = %+v", calls)
	}
	if st := s.Steps[6]; st.Text != "" || st.FinishReason != "length" {
		t.Errorf("step 7 = %+v", st)
	}
	want := Expect{LastMessageRole: model.RoleTool, LastMessageContains: "ok", ToolsOffered: []string{"read_file"}, MessageCount: 5}
	if e := s.Steps[7].Expect; e == nil || e.LastMessageRole != want.LastMessageRole || e.LastMessageContains != want.LastMessageContains ||
		len(e.ToolsOffered) != 1 || e.ToolsOffered[0] != "read_file" || e.MessageCount != 5 {
		t.Errorf("step 8 expect = %+v", e)
	}
}

func TestParseDefaultsArgumentsToEmptyObject(t *testing.T) {
	s, err := Parse("x", []byte(`{"steps":[{"tool_calls":[{"name":"list_dir"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Steps[0].ToolCalls[0].Arguments); got != "{}" {
		t.Errorf("arguments = %s, want {}", got)
	}
	if !json.Valid(s.Steps[0].ToolCalls[0].Arguments) {
		t.Error("default arguments are not valid JSON")
	}
}
