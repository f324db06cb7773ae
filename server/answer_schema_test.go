package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// POST /v1/sessions with answer_schema over real HTTP: a wrong answer is
// corrected once and the session's state carries the accepted answer as
// JSON; a bad schema is refused with 400 and nothing is started; the
// request's max_output_tokens is the session's limit.
func TestCreateWithAnswerSchema(t *testing.T) {
	a := newAPI(t, false)
	path := filepath.Join(a.dir, "answers.json")
	steps := `{"steps":[{"text":"Two files."},{"text":"{\"files\": 2}"}]}`
	if err := os.WriteFile(path, []byte(steps), 0o600); err != nil {
		t.Fatal(err)
	}
	id := a.create("", `{"task":"how many files?","model":"script:`+path+`","max_output_tokens":777,
		"answer_schema":{"type":"object","properties":{"files":{"type":"integer"}},"required":["files"]}}`)
	a.waitStatus("", id, "completed")
	_, out, _ := a.do("GET", "/v1/sessions/"+id, "", "")
	var st struct {
		AnswerJSON        json.RawMessage `json:"answer_json"`
		AnswerSchema      json.RawMessage `json:"answer_schema"`
		AnswerCorrections int             `json:"answer_corrections"`
		Limits            struct {
			MaxOutputTokens int `json:"max_output_tokens"`
		} `json:"limits"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if string(st.AnswerJSON) != `{"files":2}` || st.AnswerCorrections != 1 || !strings.Contains(string(st.AnswerSchema), `"required"`) || st.Limits.MaxOutputTokens != 777 {
		t.Fatalf("state: %+v\n%.600s", st, out)
	}
	evs, err := a.st.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := evs[len(evs)-1].Data.(*loop.SessionEnded)
	if !ok || string(end.AnswerJSON) != `{"files":2}` {
		t.Fatalf("session.ended: %+v", evs[len(evs)-1].Data)
	}

	before, _ := a.st.List(t.Context(), store.Filter{})
	for _, bad := range []string{`"a string"`, `{"type":"numbr"}`, `{"$ref":"file:///etc/hostname"}`} {
		code, out, _ := a.do("POST", "/v1/sessions", "", `{"task":"x","model":"script:`+path+`","answer_schema":`+bad+`}`)
		if code != http.StatusBadRequest || !strings.Contains(out, "answer schema") {
			t.Errorf("%s: %d %s", bad, code, out)
		}
	}
	if code, out, _ := a.do("POST", "/v1/sessions", "", `{"task":"x","model":"script:`+path+`","max_output_tokens":-5}`); code != http.StatusBadRequest {
		t.Errorf("negative max_output_tokens: %d %s", code, out)
	}
	after, _ := a.st.List(t.Context(), store.Filter{})
	if len(after) != len(before) {
		t.Errorf("refused requests started sessions: %d before, %d after", len(before), len(after))
	}
}
