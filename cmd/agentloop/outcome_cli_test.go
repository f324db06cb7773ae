package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSteps writes a scripted model's steps (JSON objects) to a file.
func writeSteps(t *testing.T, steps ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(`{"steps":[`+strings.Join(steps, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type shown struct {
	Status, Reason, Detail, Answer, Question string
}

func showJSON(t *testing.T, c *cli, id string) shown {
	t.Helper()
	out, errOut, _ := c.run("", "sessions", "show", "--json", id)
	var s shown
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("sessions show --json: %v\n%s\n%s", err, out, errOut)
	}
	return s
}

// Replies that are not answers end as what they are, with the exit code
// that says so, instead of "completed", exit 0.
func TestRunOutcomesTellTheTruth(t *testing.T) {
	cases := []struct {
		name   string
		steps  []string
		code   int
		status string
		reason string
	}{
		{"the model admits it cannot do the task",
			[]string{`{"text":"I was unable to fix the test: the fixture file is missing."}`},
			exitPaused, "waiting", "model_gave_up"},
		{"final_answer with success false",
			[]string{`{"tool_calls":[{"name":"final_answer","arguments":{"answer":"The API it needs is gone.","success":false}}]}`},
			exitPaused, "waiting", "model_gave_up"},
		{"a clean negative finding is an answer",
			[]string{`{"text":"I cannot find any bug, the code is fine."}`},
			exitCompleted, "completed", "completed"},
		{"replies cut off by the token limit",
			[]string{`{"text":"Part one, ","finish_reason":"length"}`, `{"text":"part two, ","finish_reason":"length"}`, `{"text":"part three, ","finish_reason":"length"}`},
			exitFailed, "failed", "truncated"},
		{"the plan failed",
			[]string{`{"tool_calls":[{"name":"update_plan","arguments":{"action":"create","goal":"g","steps":["a"]}}]}`,
				`{"tool_calls":[{"name":"update_plan","arguments":{"action":"fail","reason":"no network"}}]}`,
				`{"text":"Nothing was changed: no network."}`},
			exitFailed, "failed", "plan_failed"},
		{"a tool call that stays malformed after the correction",
			[]string{`{"text":"<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": </tool_call>"}`,
				`{"text":"<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\" </tool_call>"}`},
			exitFailed, "failed", "malformed_tool_call"},
		{"empty replies",
			[]string{`{"text":""}`, `{"text":"   "}`},
			exitFailed, "failed", "empty_reply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			script := writeSteps(t, tc.steps...)
			out, errOut, code := c.run("", "run", "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "do the task")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errOut)
			}
			s := showJSON(t, c, sessionID(t, c))
			if s.Status != tc.status || s.Reason != tc.reason {
				t.Fatalf("%s (%s), want %s (%s)\n%s", s.Status, s.Reason, tc.status, tc.reason, errOut)
			}
		})
	}
}

// A session waiting because the model gave up shows the model's words and
// goes on after a person's reply.
func TestModelGaveUpThenReply(t *testing.T) {
	c := newCLI(t)
	script := writeSteps(t,
		`{"text":"I am unable to continue: which database should I use?"}`,
		`{"text":"Used SQLite as you said.","expect":{"last_message_contains":"use SQLite"}}`)
	_, errOut, code := c.run("", "run", "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "add storage")
	if code != exitPaused || !strings.Contains(errOut, "which database should I use?") || !strings.Contains(errOut, "sessions reply") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	id := sessionID(t, c)
	out, errOut, code := c.run("", "sessions", "reply", "--yes", id, "use SQLite")
	if code != exitCompleted || !strings.Contains(out, "Used SQLite") {
		t.Fatalf("reply: exit %d\n%s\n%s", code, out, errOut)
	}
}
