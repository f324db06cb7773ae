package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	ExitCode                                 *int `json:"exit_code"`
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
			if s.Status != tc.status || s.Reason != tc.reason || s.ExitCode == nil || *s.ExitCode != tc.code {
				t.Fatalf("%s (%s) exit_code %v, want %s (%s) %d\n%s", s.Status, s.Reason, s.ExitCode, tc.status, tc.reason, tc.code, errOut)
			}
			// run --json prints the same outcome.
			out, _, _ = c.run("", "run", "--yes", "--json", "--model", "script:"+script, "--dir", t.TempDir(), "do the task")
			var again shown
			if err := json.Unmarshal([]byte(out), &again); err != nil || again.Status != tc.status || again.Reason != tc.reason || again.ExitCode == nil || *again.ExitCode != tc.code {
				t.Fatalf("run --json: %v %+v\n%s", err, again, out)
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

// A person's reason to terminate sets the final status: each of the
// dialog's four reasons, and free text.
func TestTerminateReasonsSetTheStatus(t *testing.T) {
	for reason, want := range map[string][2]string{
		"completed_by_user":  {"completed", "completed_by_user"},
		"failed":             {"failed", "failed_by_user"},
		"different_approach": {"terminated", "different_approach"},
		"stuck":              {"error", "stuck_by_user"},
		"going home":         {"terminated", "terminated"},
	} {
		t.Run(reason, func(t *testing.T) {
			c := newCLI(t)
			script := writeSteps(t, `{"tool_calls":[{"name":"ask_user","arguments":{"question":"Which file?"}}]}`)
			if _, errOut, code := c.run("", "run", "--model", "script:"+script, "--dir", t.TempDir(), "edit a file"); code != exitPaused {
				t.Fatalf("run: exit %d %s", code, errOut)
			}
			id := sessionID(t, c)
			out, errOut, code := c.run("", "sessions", "terminate", id, reason)
			if code != 0 || !strings.Contains(out, want[0]+" ("+want[1]+")") {
				t.Fatalf("terminate: exit %d %q %s", code, out, errOut)
			}
			if s := showJSON(t, c, id); s.Status != want[0] || s.Reason != want[1] {
				t.Fatalf("%s (%s), want %v", s.Status, s.Reason, want)
			}
		})
	}
}

// A tool refused access stops the run for a person (exit 4); resuming
// goes on with the refusal in the model's conversation.
func TestPermissionDeniedStopsTheRun(t *testing.T) {
	c := newCLI(t)
	script := writeSteps(t,
		`{"tool_calls":[{"name":"read_file","arguments":{"path":"/etc/passwd"}}]}`,
		`{"text":"I read nothing outside the workspace.","expect":{"last_message_contains":"outside the workspace"}}`)
	_, errOut, code := c.run("", "run", "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "read /etc/passwd")
	if code != exitPaused || !strings.Contains(errOut, "permission_denied") || !strings.Contains(errOut, "read_file was refused access") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	out, errOut, code := c.run("", "sessions", "resume", "--yes", sessionID(t, c))
	if code != exitCompleted || !strings.Contains(out, "I read nothing") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A model that does not answer in time is asked once more, then the run
// pauses (exit 4) saying so.
func TestModelTimeoutRetriesThenPauses(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		io.Copy(io.Discard, r.Body) // the server notices the client leave only once the body is read
		<-r.Context().Done()        // never answers
	}))
	t.Cleanup(srv.Close)
	c := newCLI(t)
	_, errOut, code := c.run("", "run", "--model", "openai/gpt-test", "--base-url", srv.URL+"/v1", "--api-key", "k",
		"--model-timeout", "300ms", "--dir", t.TempDir(), "task")
	if code != exitPaused || !strings.Contains(errOut, "model_timeout") || !strings.Contains(errOut, "--model-timeout") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Fatalf("%d calls, want 2 (one retry)", calls)
	}
}

// Numeric flags refuse values that make no sense, with a usage error.
func TestNumericFlagsRefuseNonsense(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{
		{"--budget-usd", "NaN"}, {"--budget-usd", "-1"}, {"--budget-usd", "+Inf"},
		{"--timeout", "-1s"}, {"--model-timeout", "-5s"}, {"--max-iterations", "-3"}, {"--num-ctx", "-1"},
	} {
		_, errOut, code := c.run("", append(append([]string{"run"}, args...), "task")...)
		if code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}

// The session database and the directory made for it are the user's alone.
func TestDatabaseIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "agentloop")
	c := &cli{t: t, db: filepath.Join(dir, "sessions.db")}
	script := writeSteps(t, `{"text":"hi"}`)
	if _, errOut, code := c.run("", "run", "--model", "script:"+script, "--dir", t.TempDir(), "say hi"); code != exitCompleted {
		t.Fatalf("exit %d %s", code, errOut)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, c.db: 0o600} {
		info, err := os.Stat(path)
		if err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", path, info.Mode().Perm(), err, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, _ := e.Info(); info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v", e.Name(), info.Mode().Perm())
		}
	}
}

// Deeply nested tool arguments do not blow up --json output: past a depth
// the JSON is printed compact (it was indented: 10 KB became 50 MB).
func TestJSONOfDeeplyNestedArgumentsStaysSmall(t *testing.T) {
	args := `{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`
	c := newCLI(t)
	script := writeSteps(t, `{"tool_calls":[{"name":"read_file","arguments":`+args+`}]}`, `{"text":"ok"}`)
	if _, errOut, code := c.run("", "run", "--model", "script:"+script, "--dir", t.TempDir(), "x"); code != exitCompleted {
		t.Fatalf("exit %d %s", code, errOut)
	}
	out, _, code := c.run("", "sessions", "show", "--json", sessionID(t, c))
	if code != 0 || len(out) > 100_000 || !json.Valid([]byte(out)) {
		t.Fatalf("exit %d, %d bytes, valid %v", code, len(out), json.Valid([]byte(out)))
	}
	// Ordinary output stays indented for people.
	if small, _, _ := c.run("", "sessions", "list", "--json"); !strings.Contains(small, "\n  {") {
		t.Fatalf("not indented: %.200s", small)
	}
}
