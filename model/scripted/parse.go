package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/agentloop/agentloop/model"
)

// Load reads and parses the script file at path. Errors name the file and,
// when the problem is inside a step, the step (1-based):
//
//	examples/x.json: step 2: tool_calls[0]: arguments must be a JSON object
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a script in the JSON format described in the package
// documentation. name is used in error messages and becomes Script.Name.
// Unknown fields, bad durations, unknown error kinds and finish reasons,
// non-object tool arguments and an empty step list are errors.
func Parse(name string, data []byte) (*Script, error) {
	if name == "" {
		name = "script"
	}
	var raw scriptJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		switch err {
		case io.EOF:
			return nil, fmt.Errorf("%s: empty file: want a JSON object with \"steps\"", name)
		case io.ErrUnexpectedEOF:
			return nil, fmt.Errorf("%s: unexpected end of file: the JSON is incomplete", name)
		}
		return nil, fmt.Errorf("%s%s: %s", name, position(data, err), jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: unexpected data after the script object", name)
	}
	if len(raw.Steps) == 0 {
		return nil, fmt.Errorf("%s: no steps: a script needs at least one entry in \"steps\"", name)
	}
	if raw.StreamChunk < 0 {
		return nil, fmt.Errorf("%s: stream_chunk must not be negative (got %d)", name, raw.StreamChunk)
	}
	s := &Script{
		Name:        name,
		Description: raw.Description,
		Repeat:      raw.Repeat,
		StreamChunk: raw.StreamChunk,
		Steps:       make([]Step, len(raw.Steps)),
	}
	for i, rs := range raw.Steps {
		step, err := parseStep(rs)
		if err != nil {
			return nil, fmt.Errorf("%s: step %d: %w", name, i+1, err)
		}
		s.Steps[i] = step
	}
	return s, nil
}

type scriptJSON struct {
	Description string            `json:"description"`
	Steps       []json.RawMessage `json:"steps"`
	Repeat      bool              `json:"repeat"`
	StreamChunk int               `json:"stream_chunk"`
}

type stepJSON struct {
	Text         *string        `json:"text"`
	ToolCalls    []toolCallJSON `json:"tool_calls"`
	FinishReason string         `json:"finish_reason"`
	Usage        *model.Usage   `json:"usage"`
	Delay        string         `json:"delay"`
	StreamChunk  int            `json:"stream_chunk"`
	Error        *errorJSON     `json:"error"`
	Expect       *Expect        `json:"expect"`
}

type toolCallJSON struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments"`
	RawArguments *string         `json:"raw_arguments"`
}

type errorJSON struct {
	Kind       string `json:"kind"`
	Status     int    `json:"status"`
	Message    string `json:"message"`
	RetryAfter string `json:"retry_after"`
}

var finishReasons = []string{model.FinishStop, model.FinishToolCalls, model.FinishLength, model.FinishFiltered}

var roles = []model.Role{model.RoleSystem, model.RoleUser, model.RoleAssistant, model.RoleTool}

func parseStep(data json.RawMessage) (Step, error) {
	var raw stepJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Step{}, errors.New(jsonProblem(err))
	}
	var step Step
	var err error
	if raw.Delay != "" {
		if step.Delay, err = parseDuration(raw.Delay); err != nil {
			return Step{}, fmt.Errorf("delay: %w", err)
		}
	}
	if raw.StreamChunk < 0 {
		return Step{}, fmt.Errorf("stream_chunk must not be negative (got %d)", raw.StreamChunk)
	}
	step.StreamChunk = raw.StreamChunk
	if raw.Expect != nil {
		if err := checkExpect(raw.Expect); err != nil {
			return Step{}, fmt.Errorf("expect: %w", err)
		}
		step.Expect = raw.Expect
	}

	if raw.Error != nil {
		for _, f := range []struct {
			name    string
			present bool
		}{
			{"text", raw.Text != nil},
			{"tool_calls", raw.ToolCalls != nil},
			{"finish_reason", raw.FinishReason != ""},
			{"usage", raw.Usage != nil},
			{"stream_chunk", raw.StreamChunk != 0},
		} {
			if f.present {
				return Step{}, fmt.Errorf("an error step cannot also have %s", f.name)
			}
		}
		if step.Err, err = buildError(raw.Error); err != nil {
			return Step{}, fmt.Errorf("error: %w", err)
		}
		return step, nil
	}

	if raw.Text == nil && raw.ToolCalls == nil {
		return Step{}, errors.New(`empty step: give "text", "tool_calls" or "error"`)
	}
	if raw.Text != nil {
		step.Text = *raw.Text
	}
	seen := map[string]bool{}
	for i, tc := range raw.ToolCalls {
		call, err := buildToolCall(tc)
		if err != nil {
			return Step{}, fmt.Errorf("tool_calls[%d]: %w", i, err)
		}
		if call.ID != "" {
			if seen[call.ID] {
				return Step{}, fmt.Errorf("tool_calls[%d]: duplicate id %q", i, call.ID)
			}
			seen[call.ID] = true
		}
		step.ToolCalls = append(step.ToolCalls, call)
	}
	if raw.FinishReason != "" {
		if !contains(finishReasons, raw.FinishReason) {
			return Step{}, fmt.Errorf("finish_reason must be one of %s (got %q)", strings.Join(finishReasons, ", "), raw.FinishReason)
		}
		step.FinishReason = raw.FinishReason
	}
	if u := raw.Usage; u != nil {
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
			return Step{}, errors.New("usage: token counts must not be negative")
		}
		step.Usage = u
	}
	return step, nil
}

func buildToolCall(tc toolCallJSON) (model.ToolCall, error) {
	if tc.Name == "" {
		return model.ToolCall{}, errors.New("name is required")
	}
	call := model.ToolCall{ID: tc.ID, Name: tc.Name}
	switch {
	case tc.RawArguments != nil && tc.Arguments != nil:
		return model.ToolCall{}, errors.New("give arguments or raw_arguments, not both")
	case tc.RawArguments != nil:
		call.Arguments = json.RawMessage(*tc.RawArguments)
	case tc.Arguments == nil:
		call.Arguments = json.RawMessage("{}")
	default:
		trimmed := bytes.TrimSpace(tc.Arguments)
		if len(trimmed) == 0 || trimmed[0] != '{' {
			return model.ToolCall{}, errors.New("arguments must be a JSON object (use raw_arguments to send anything else verbatim)")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, trimmed); err != nil {
			return model.ToolCall{}, fmt.Errorf("arguments: %v", err)
		}
		call.Arguments = json.RawMessage(buf.Bytes())
	}
	return call, nil
}

var errorKinds = []string{"retryable", "timeout", "malformed", "fatal"}

// buildError returns the error a step plays, or why the spec is invalid.
func buildError(e *errorJSON) (scripted error, invalid error) {
	if !contains(errorKinds, e.Kind) {
		return nil, fmt.Errorf("kind must be one of %s (got %q)", strings.Join(errorKinds, ", "), e.Kind)
	}
	if e.Status != 0 && (e.Status < 100 || e.Status > 599) {
		return nil, fmt.Errorf("status must be an HTTP status code (got %d)", e.Status)
	}
	var retryAfter time.Duration
	if e.RetryAfter != "" {
		if e.Kind != "retryable" {
			return nil, fmt.Errorf("retry_after is only allowed with kind retryable (kind is %s)", e.Kind)
		}
		var err error
		if retryAfter, err = parseDuration(e.RetryAfter); err != nil {
			return nil, fmt.Errorf("retry_after: %w", err)
		}
	}
	msg := e.Message
	if msg == "" {
		msg = "scripted " + e.Kind + " error"
	}
	if e.Status != 0 {
		msg = fmt.Sprintf("HTTP %d: %s", e.Status, msg)
	}
	switch e.Kind {
	case "retryable":
		return &model.RetryableError{Err: errors.New(msg), RetryAfter: retryAfter}, nil
	case "timeout":
		return fmt.Errorf("%s: %w", msg, model.ErrTimeout), nil
	case "malformed":
		return fmt.Errorf("%s: %w", msg, model.ErrMalformed), nil
	default:
		return errors.New(msg), nil
	}
}

func checkExpect(e *Expect) error {
	if e.LastMessageRole != "" && !contains(roles, e.LastMessageRole) {
		return fmt.Errorf("last_message_role must be one of system, user, assistant, tool (got %q)", e.LastMessageRole)
	}
	if e.MessageCount < 0 {
		return fmt.Errorf("message_count must not be negative (got %d)", e.MessageCount)
	}
	for i, name := range e.ToolsOffered {
		if name == "" {
			return fmt.Errorf("tools_offered[%d] is empty", i)
		}
	}
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a Go duration such as \"50ms\" or \"2s\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q must not be negative", s)
	}
	return d, nil
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// jsonProblem turns an encoding/json error into a message that names the
// JSON field rather than Go types.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := ""
		if te.Field != "" {
			where = te.Field + ": "
		}
		return fmt.Sprintf("%sgot a JSON %s, want %s", where, te.Value, jsonKind(te.Type))
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	default:
		return "object"
	}
}

// position returns ":line:col" (1-based) of a syntax error in data, or "".
func position(data []byte, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return ""
	}
	// Offset counts the bytes read, the offending one included.
	off := max(min(int(se.Offset), len(data))-1, 0)
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf(":%d:%d", line, col)
}
