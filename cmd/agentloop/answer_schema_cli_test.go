package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeAnswerSchema(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "schema.json")
	schema := `{"type":"object","properties":{"files":{"type":"array","items":{"type":"string"}},"count":{"type":"integer"}},"required":["files","count"],"additionalProperties":false}`
	if err := os.WriteFile(p, []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run --answer-schema: the model is told the schema; an answer that
// matches completes, one wrong answer is corrected, a second ends the
// session failed (invalid_answer) with exit 1; run --json prints the
// accepted answer as answer_json.
func TestRunAnswerSchema(t *testing.T) {
	right := `{"tool_calls":[{"name":"final_answer","arguments":{"answer":"{\"files\":[\"a.txt\"],\"count\":1}"}}],"expect":{"last_message_contains":"must be a JSON value that matches this JSON Schema"}}`
	cases := []struct {
		name        string
		steps       []string
		code        int
		status      string
		reason      string
		answerJSON  string
		corrections int
	}{
		{"right at once", []string{right}, exitCompleted, "completed", "completed", `{"files":["a.txt"],"count":1}`, 0},
		{"wrong, then right",
			[]string{`{"text":"There is one file, a.txt."}`,
				`{"text":"{\"files\": [\"a.txt\"], \"count\": 1}","expect":{"last_message_contains":"it is not JSON"}}`},
			exitCompleted, "completed", "completed", `{"files":["a.txt"],"count":1}`, 1},
		{"wrong twice",
			[]string{`{"text":"{\"files\": \"a.txt\"}"}`,
				`{"text":"{\"files\": [\"a.txt\"], \"count\": \"one\"}","expect":{"last_message_contains":"/files: got string, want array"}}`},
			exitFailed, "failed", "invalid_answer", "", 1},
	}
	schema := writeAnswerSchema(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := newCLI(t)
			ws := t.TempDir()
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
			out, errOut, code := cl.run("", "run", "--json", "--answer-schema", schema, "--model", "script:"+writeSteps(t, c.steps...), "--dir", ws, "list the files")
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s", code, c.code, errOut)
			}
			var st struct {
				Status, Reason, Detail string
				AnswerJSON             json.RawMessage `json:"answer_json"`
				AnswerCorrections      int             `json:"answer_corrections"`
			}
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var compact bytes.Buffer
			if len(st.AnswerJSON) > 0 {
				json.Compact(&compact, st.AnswerJSON)
			}
			if st.Status != c.status || st.Reason != c.reason || compact.String() != c.answerJSON || st.AnswerCorrections != c.corrections {
				t.Fatalf("%s (%s) answer_json %s, %d corrections; want %s (%s) %s, %d\n%s", st.Status, st.Reason, st.AnswerJSON, st.AnswerCorrections,
					c.status, c.reason, c.answerJSON, c.corrections, errOut)
			}
			if c.reason == "invalid_answer" && !strings.Contains(st.Detail, "/count: got string, want integer") {
				t.Fatalf("the detail does not say what is wrong: %q", st.Detail)
			}
		})
	}
}

// A schema file that is missing or not a schema is refused before a
// session starts.
func TestRunAnswerSchemaRefused(t *testing.T) {
	c := newCLI(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"type": 3}`), 0o644)
	script := writeSteps(t, `{"text":"{}"}`)
	for _, file := range []string{bad, filepath.Join(t.TempDir(), "missing.json")} {
		_, errOut, code := c.run("", "run", "--answer-schema", file, "--model", "script:"+script, "--dir", t.TempDir(), "x")
		if code == exitCompleted || !strings.Contains(errOut, "--answer-schema") {
			t.Errorf("%s: exit %d %s", file, code, errOut)
		}
	}
	if out, _, _ := c.run("", "sessions", "list", "--json"); strings.Contains(out, `"id"`) {
		t.Errorf("a session was started: %s", out)
	}
}

// --max-output-tokens is each request's max tokens; a profile's
// limits.max_output_tokens applies without the flag, and the flag wins.
func TestRunMaxOutputTokens(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("profiles:\n  short:\n    limits:\n      max_output_tokens: 222\n"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want float64
	}{
		{"flag", []string{"--max-output-tokens", "321"}, 321},
		{"profile", []string{"--config", cfg, "--profile", "short"}, 222},
		{"flag over profile", []string{"--config", cfg, "--profile", "short", "--max-output-tokens", "99"}, 99},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, requests := fakeOpenAI(t)
			cl := newCLI(t)
			ws := t.TempDir()
			os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello."), 0o644)
			args := append([]string{"run", "--model", "openai/gpt-test", "--base-url", srv.URL + "/v1", "--api-key", "sk-test", "--dir", ws}, c.args...)
			_, errOut, code := cl.run("", append(args, "what does hello.txt say?")...)
			if code != exitCompleted {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			reqs := requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				// OpenAI's own API takes max_completion_tokens.
				if got := firstNonNil(r["max_completion_tokens"], r["max_tokens"]); got != c.want {
					t.Errorf("request %d: max tokens %v, want %v", i+1, got, c.want)
				}
			}
		})
	}
	if _, errOut, code := newCLI(t).run("", "run", "--max-output-tokens", "-1", "--model", "script:x", "x"); code == exitCompleted || !strings.Contains(errOut, "negative") {
		t.Errorf("negative: %d %s", code, errOut)
	}
}

func firstNonNil(v ...any) any {
	for _, x := range v {
		if x != nil {
			return x
		}
	}
	return nil
}

// run --server sends --answer-schema and --max-output-tokens in its start
// request; the server's session corrects the wrong answer and run --json
// prints the accepted one.
func TestRunAnswerSchemaAgainstAServer(t *testing.T) {
	c := newCLI(t)
	s := c.serve("--allow-script-models", "--workspaces", t.TempDir())
	c.env = append(c.env, "AGENTLOOP_SERVER="+s.url)
	script := writeSteps(t, `{"text":"a.txt"}`, `{"text":"{\"files\":[\"a.txt\"],\"count\":1}"}`)
	out, errOut, code := c.run("", "run", "--json", "--answer-schema", writeAnswerSchema(t), "--max-output-tokens", "555", "--model", "script:"+script, "list the files")
	if code != exitCompleted {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var st struct {
		AnswerJSON        json.RawMessage `json:"answer_json"`
		AnswerCorrections int             `json:"answer_corrections"`
		Limits            struct {
			MaxOutputTokens int `json:"max_output_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var compact bytes.Buffer
	json.Compact(&compact, st.AnswerJSON)
	if compact.String() != `{"files":["a.txt"],"count":1}` || st.AnswerCorrections != 1 || st.Limits.MaxOutputTokens != 555 {
		t.Fatalf("answer_json %s, %d corrections, max output tokens %d\n%s", st.AnswerJSON, st.AnswerCorrections, st.Limits.MaxOutputTokens, errOut)
	}
}
