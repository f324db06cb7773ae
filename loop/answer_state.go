package loop

import "encoding/json"

// AnswerState is the session's structured-answer concern (answer.go): the
// schema its final answer must match, the corrections the model got, and
// the accepted answer as JSON once the session completed.
type AnswerState struct {
	// AnswerSchema is the JSON Schema the final answer must match; empty
	// when the session asks for none.
	AnswerSchema json.RawMessage `json:"answer_schema,omitempty"`
	// AnswerCorrections counts the messages that told the model its
	// answer did not match the schema.
	AnswerCorrections int `json:"answer_corrections,omitempty"`
	// AnswerJSON is the completed session's answer, as the JSON value the
	// schema accepted.
	AnswerJSON json.RawMessage `json:"answer_json,omitempty"`
}

func (a *AnswerState) apply(e Event) {
	switch d := e.Data.(type) {
	case *SessionStarted:
		a.AnswerSchema = d.AnswerSchema
	case *MessageAdded:
		if d.Kind == KindAnswerCorrection {
			a.AnswerCorrections++
		}
	case *SessionEnded:
		a.AnswerJSON = d.AnswerJSON
	}
}
