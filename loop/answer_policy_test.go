package loop

import (
	"encoding/json"
	"testing"
)

// The answer check as a table over folded states.
func TestPolicyAnswerCheck(t *testing.T) {
	schema := json.RawMessage(`{"type":"array","items":{"type":"string"},"minItems":1}`)
	withSchema := func(max int) *SessionStarted {
		s := started(ModeTools, max)
		s.AnswerSchema = schema
		return s
	}
	p := policy{}
	cases := []struct {
		name   string
		st     *State
		answer string
		ok     bool
		events []string
	}{
		{"no schema", fold(t, seq([]Payload{started(ModeTools, 5)}, inIteration(1, "anything"))...), "anything", true, nil},
		{"match", fold(t, seq([]Payload{withSchema(5)}, inIteration(1, `["a"]`))...), ` ["a"] `, true, nil},
		{"fenced match", fold(t, seq([]Payload{withSchema(5)}, inIteration(1, ""))...), "```\n[\"a\",\"b\"]\n```", true, nil},
		{"first mismatch", fold(t, seq([]Payload{withSchema(5)}, inIteration(1, `[]`))...), `[]`, false,
			[]string{`"kind":"answer_correction"`}},
		{"not JSON", fold(t, seq([]Payload{withSchema(5)}, inIteration(1, "a, b"))...), "a, b", false,
			[]string{`it is not JSON`}},
		{"second mismatch", fold(t, seq([]Payload{withSchema(5)}, inIteration(1, `[]`),
			[]Payload{&IterationEnded{N: 1, Status: IterationCompleted, Answer: "[]"}, &MessageAdded{Role: "user", Kind: KindAnswerCorrection, Content: "fix it"}},
			inIteration(2, `[1]`))...), `[1]`, false,
			[]string{`iteration.ended{"n":2,"status":"failed"`, `"reason":"invalid_answer"`}},
		{"last step", fold(t, seq([]Payload{withSchema(1)}, inIteration(1, `{}`))...), `{}`, false,
			[]string{`iteration.ended`, `no step was left`}},
	}
	for _, c := range cases {
		step, ok := p.answerCheck(c.st, c.answer)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v (%s)", c.name, ok, c.ok, describe(step))
			continue
		}
		want(t, c.name, step, "nothing", c.events...)
	}
}

// A completed session with a schema records its answer as JSON.
func TestPolicyVerifiedRecordsAnswerJSON(t *testing.T) {
	s := started(ModeTools, 5)
	s.AnswerSchema = json.RawMessage(`{"type":"object"}`)
	st := fold(t, seq([]Payload{s}, inIteration(1, `{"a": 1}`), []Payload{&IterationEnded{N: 1, Status: IterationCompleted, Answer: `{"a": 1}`}})...)
	step := policy{}.verified(st, `{"a": 1}`, "")
	want(t, "completed", step, "nothing", `"answer_json":{"a":1}`)
}
