package loop_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/session"
)

const cityAnswerSchema = `{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer","minimum":0}},"required":["city","population"],"additionalProperties":false}`

func runWithSchema(t *testing.T, e *env, m *scripted.Model, tools []tool.Tool) *loop.State {
	t.Helper()
	st, err := e.runner(t, m, tools, nil).Run(t.Context(), loop.Task{Prompt: "what is the largest city of Japan?", Mode: loop.ModeTools, AnswerSchema: json.RawMessage(cityAnswerSchema)})
	if err != nil {
		t.Fatal(err)
	}
	checkScript(t, m)
	return refold(t, e, st)
}

// The model is told the schema with its task; a matching answer (as text,
// in a code fence) completes the session with the answer as JSON.
func TestAnswerSchemaMatchingAnswerCompletes(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("```json\n{\"city\": \"Tokyo\", \"population\": 37000000}\n```").
		WithExpect(scripted.Expect{LastMessageContains: `"required": [`}))
	st := runWithSchema(t, e, m, []tool.Tool{echoTool("read_file", &recorder{})})
	if st.Status != loop.StatusCompleted || string(st.AnswerJSON) != `{"city":"Tokyo","population":37000000}` || st.AnswerCorrections != 0 {
		t.Fatalf("%s (%s) answer_json %s, %d corrections", st.Status, st.Reason, st.AnswerJSON, st.AnswerCorrections)
	}
	if !strings.Contains(st.Task, "largest city") || strings.Contains(st.Task, "JSON Schema") {
		t.Fatalf("the recorded task is the person's, without the instructions: %q", st.Task)
	}
}

// A wrong answer through final_answer gets one correction saying what is
// wrong; the corrected answer completes the session.
func TestAnswerSchemaWrongThenRight(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Call("final_answer", `{"answer":"{\"city\":\"Tokyo\",\"population\":\"many\"}"}`),
		scripted.Call("final_answer", `{"answer":"{\"city\":\"Tokyo\",\"population\":37000000}"}`).
			WithExpect(scripted.Expect{LastMessageContains: "/population: got string, want integer"}),
	)
	st := runWithSchema(t, e, m, session.Tools())
	if st.Status != loop.StatusCompleted || string(st.AnswerJSON) != `{"city":"Tokyo","population":37000000}` || st.AnswerCorrections != 1 {
		t.Fatalf("%s (%s) %q answer_json %s, %d corrections", st.Status, st.Reason, st.Detail, st.AnswerJSON, st.AnswerCorrections)
	}
	kinds := 0
	for _, msg := range st.Conversation {
		if strings.Contains(msg.Content, "does not match the required JSON Schema") {
			kinds++
		}
	}
	if kinds != 1 {
		t.Fatalf("%d correction messages in the conversation, want 1", kinds)
	}
}

// A second wrong answer ends the session failed (invalid_answer), the
// answer kept as a partial one and no answer JSON.
func TestAnswerSchemaWrongTwiceFails(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Text("Tokyo, about 37 million people."),
		scripted.Text(`{"city":"Tokyo"}`).WithExpect(scripted.Expect{LastMessageContains: "it is not JSON"}),
	)
	st := runWithSchema(t, e, m, []tool.Tool{echoTool("read_file", &recorder{})})
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonInvalidAnswer || !st.Partial || st.Answer != `{"city":"Tokyo"}` || st.AnswerJSON != nil {
		t.Fatalf("%s (%s) partial %v answer %q json %s", st.Status, st.Reason, st.Partial, st.Answer, st.AnswerJSON)
	}
	if !strings.Contains(st.Detail, "missing property 'population'") {
		t.Fatalf("detail does not say what is wrong: %q", st.Detail)
	}
}

// A wrong answer at the last step ends the session at once: no step is
// left for a corrected one.
func TestAnswerSchemaWrongAtLastStepFails(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("Tokyo"))
	one := loop.Limits{MaxIterations: 1}
	st, err := e.runner(t, m, nil, nil).Run(t.Context(), loop.Task{Prompt: "largest city?", Mode: loop.ModeTools, AnswerSchema: json.RawMessage(cityAnswerSchema), Limits: &one})
	if err != nil {
		t.Fatal(err)
	}
	checkScript(t, m)
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonInvalidAnswer || !strings.Contains(st.Detail, "no step was left") {
		t.Fatalf("%s (%s) %q", st.Status, st.Reason, st.Detail)
	}
}

// A schema that is not one is refused before anything is recorded, and
// one that refers to a file is refused without reading it.
func TestAnswerSchemaRefused(t *testing.T) {
	for name, schema := range map[string]string{
		"not an object": `"string"`,
		"not JSON":      `{"type":`,
		"bad keyword":   `{"type":"strin"}`,
		"a file":        `{"$ref":"file:///etc/passwd"}`,
		"too big":       `{"description":"` + strings.Repeat("x", loop.MaxAnswerSchemaBytes) + `"}`,
	} {
		e := newEnv()
		_, err := e.runner(t, scripted.Replies(), nil, nil).Run(t.Context(), loop.Task{Prompt: "x", AnswerSchema: json.RawMessage(schema)})
		if err == nil || !strings.Contains(err.Error(), "answer schema") {
			t.Errorf("%s: %v", name, err)
		}
		if strings.Contains(name, "file") && strings.Contains(err.Error(), "root:") {
			t.Errorf("%s: the file was read: %v", name, err)
		}
		if len(e.log.events) != 0 {
			t.Errorf("%s: %d sessions recorded", name, len(e.log.events))
		}
	}
}
