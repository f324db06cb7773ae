package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentloop/agentloop/internal/ownstack"
	"github.com/agentloop/agentloop/internal/schemaref"
	"github.com/agentloop/agentloop/model"
)

// Structured final answers. A session may carry an answer schema (a JSON
// Schema, recorded in session.started): its final answer — final_answer's
// answer or a reply's text — must then be a JSON value the schema accepts.
// The rules, all decided by the pure policy from the folded state:
//
//   - The model is told the schema with its task (the first user message).
//   - An answer that is not JSON, or that the schema rejects, gets one
//     correction message (kind answer_correction) saying exactly what is
//     wrong; the session goes on.
//   - A second rejected answer in the same session ends it failed with
//     reason invalid_answer, the answer kept as a partial one.
//   - An accepted answer is checked before the gate and verification; the
//     session that completes records it as JSON (session.ended's
//     answer_json, the state's answer_json).
//
// Schemas never load anything: a $ref to a file or a URL is refused, so a
// schema from an API caller cannot read the server's files.

// MaxAnswerSchemaBytes bounds an answer schema's size.
const MaxAnswerSchemaBytes = 64 << 10

// ReasonInvalidAnswer: the final answer did not match the answer schema
// after one correction.
const ReasonInvalidAnswer StopReason = "invalid_answer"

// KindAnswerCorrection marks the message telling the model what is wrong
// with its final answer against the answer schema.
const KindAnswerCorrection MessageKind = "answer_correction"

// CompileAnswerSchema checks an answer schema: a JSON object of at most
// MaxAnswerSchemaBytes that compiles as a JSON Schema without loading
// other documents.
func CompileAnswerSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > MaxAnswerSchemaBytes {
		return nil, fmt.Errorf("answer schema: %d bytes, at most %d", len(raw), MaxAnswerSchemaBytes)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New(`answer schema: give a JSON Schema object, e.g. {"type":"object","properties":{…},"required":[…]}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("answer schema: not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(schemaref.Refused("answer schemas"))
	const url = "agentloop://answer/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("answer schema: %v", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("answer schema does not compile: %v", err)
	}
	return s, nil
}

// answerValue reads an answer as JSON: the whole text, or the one fenced
// code block (```json … ```) that is all of it.
func answerValue(text string) (json.RawMessage, error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") && strings.HasSuffix(t, "```") && len(t) >= 6 {
		t = strings.TrimSuffix(t, "```")
		if nl := strings.IndexByte(t, '\n'); nl >= 0 {
			t = t[nl+1:] // the opening fence and its language tag
		} else {
			t = strings.TrimPrefix(t, "```")
		}
		t = strings.TrimSpace(t)
	}
	if !json.Valid([]byte(t)) {
		var v any
		err := json.Unmarshal([]byte(t), &v)
		return nil, fmt.Errorf("it is not JSON (%v)", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(t)); err != nil {
		return nil, fmt.Errorf("it is not JSON (%v)", err)
	}
	return buf.Bytes(), nil
}

var answerPrinter = message.NewPrinter(language.English)

// checkAnswer returns the answer as compact JSON when the schema accepts
// it, else what is wrong, in words the model can act on.
func checkAnswer(schema json.RawMessage, text string) (json.RawMessage, error) {
	s, err := CompileAnswerSchema(schema)
	if err != nil {
		return nil, err
	}
	value, err := answerValue(text)
	if err != nil {
		return nil, err
	}
	// The validator recurses over the value: deep nesting runs on a
	// stack of its own (see internal/ownstack).
	err = ownstack.Do(func() error {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
		if err != nil {
			return fmt.Errorf("it is not JSON (%v)", err)
		}
		return s.Validate(inst)
	})
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return nil, errors.New(validationProblems(ve))
	}
	if err != nil {
		return nil, err
	}
	return value, nil
}

// validationProblems lists each failed check with where in the answer.
func validationProblems(ve *jsonschema.ValidationError) string {
	var parts []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "the answer"
			if len(e.InstanceLocation) > 0 {
				loc = "/" + strings.Join(e.InstanceLocation, "/")
			}
			parts = append(parts, loc+": "+e.ErrorKind.LocalizedString(answerPrinter))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) > 8 {
		parts = append(parts[:8], fmt.Sprintf("and %d more", len(parts)-8))
	}
	return strings.Join(parts, "; ")
}

// answerInstructions is what the model is told about the answer schema,
// after its task.
func answerInstructions(schema json.RawMessage) string {
	var pretty bytes.Buffer
	if json.Indent(&pretty, schema, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(schema)
	}
	return "Your final answer must be a JSON value that matches this JSON Schema — only the JSON, no other text " +
		"(with the final_answer tool, put the JSON text in its answer):\n```json\n" + pretty.String() + "\n```"
}

// withAnswerInstructions adds the schema's instructions to the last user
// message of a new session's conversation (or as a user message of their
// own when the conversation does not end with one).
func withAnswerInstructions(conv []model.Message, schema json.RawMessage) []model.Message {
	if len(schema) == 0 {
		return conv
	}
	text := answerInstructions(schema)
	if n := len(conv); n > 0 && conv[n-1].Role == model.RoleUser {
		conv[n-1].Content += "\n\n" + text
		return conv
	}
	return append(conv, model.Message{Role: model.RoleUser, Content: text})
}

// answerCheck decides a final answer against the session's answer schema
// before anything else settles it: ok when the session has no schema or
// the schema accepts the answer. Otherwise the model is told what is
// wrong once; a second rejected answer ends the session invalid_answer
// (at once, too, when no iteration is left for a corrected answer).
func (p policy) answerCheck(st *State, answer string) (Step, bool) {
	if len(st.AnswerSchema) == 0 {
		return Step{}, true
	}
	_, err := checkAnswer(st.AnswerSchema, answer)
	if err == nil {
		return Step{}, true
	}
	if st.AnswerCorrections >= 1 || st.CurrentIteration >= st.MaxIterations {
		why := "after one correction"
		if st.AnswerCorrections == 0 {
			why = "and no step was left to correct it"
		}
		return Step{Events: sessionEnd(st, &SessionEnded{Status: StatusFailed, Reason: ReasonInvalidAnswer,
			Detail: "the final answer does not match the answer schema " + why + " (" + err.Error() + "); check the schema, or try another model",
			Answer: answer, Partial: true}, "")}, false
	}
	return Step{Events: []Payload{&MessageAdded{Role: model.RoleUser, Kind: KindAnswerCorrection,
		Content: "Your final answer does not match the required JSON Schema: " + err.Error() +
			". Send the final answer again as JSON that matches the schema, and only the JSON."}}}, false
}

// answerJSON is a completed session's answer as JSON: the answer the
// schema accepted; nil without a schema.
func answerJSON(st *State, answer string) json.RawMessage {
	if len(st.AnswerSchema) == 0 {
		return nil
	}
	v, err := checkAnswer(st.AnswerSchema, answer)
	if err != nil {
		return nil
	}
	return v
}
