package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type shownStart struct {
	Mode          string
	Task          string
	SystemPrompt  string `json:"system_prompt"`
	MaxIterations int    `json:"max_iterations"`
	Tools         []string
	Answer        string
	Status        string
}

func showStart(t *testing.T, c *cli) shownStart {
	t.Helper()
	out, _, _ := c.run("", "sessions", "show", "--json", sessionID(t, c))
	var s shownStart
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return s
}

// --mode flash: one call with the single-shot prompt and no tools; the
// reply is the answer (completed, exit 0) even with a larger step limit.
func TestModeFlash(t *testing.T) {
	c := newCLI(t)
	script := writeSteps(t, `{"text":"42","expect":{"message_count":2}}`)
	out, errOut, code := c.run("", "run", "--mode", "flash", "--max-iterations", "15", "--model", "script:"+script, "--dir", t.TempDir(), "6 times 7?")
	if code != exitCompleted || strings.TrimSpace(out) != "42" {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	s := showStart(t, c)
	if s.Mode != "single_shot" || s.MaxIterations != 1 || len(s.Tools) != 0 || !strings.Contains(s.SystemPrompt, "Answer the task in this one reply") {
		t.Fatalf("%+v", s)
	}
	if text, _, _ := c.run("", "sessions", "show", sessionID(t, c)); !strings.Contains(text, "mode single_shot") {
		t.Fatalf("sessions show lacks the mode:\n%s", text)
	}
}

// --mode thinking is the tool loop at 10 steps, stated in the prompt; the
// default prompt always states the step limit and lists the files the task
// names.
func TestModeThinkingAndPromptFacts(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "calc.go"), []byte("package calc\n"), 0o644)
	c := newCLI(t)
	script := writeSteps(t, `{"text":"done"}`)
	if _, errOut, code := c.run("", "run", "--mode", "thinking", "--model", "script:"+script, "--dir", ws, "fix the bug in calc.go"); code != exitCompleted {
		t.Fatalf("exit %d %s", code, errOut)
	}
	s := showStart(t, c)
	if s.Mode != "tools" || s.MaxIterations != 10 || !strings.Contains(s.SystemPrompt, "at most 10 steps") || !strings.Contains(s.SystemPrompt, "Files named in the task: calc.go") {
		t.Fatalf("%+v", s)
	}
	c = newCLI(t)
	if _, errOut, code := c.run("", "run", "--model", "script:"+script, "--dir", ws, "fix calc.go"); code != exitCompleted {
		t.Fatalf("exit %d %s", code, errOut)
	}
	if s := showStart(t, c); !strings.Contains(s.SystemPrompt, "at most 15 steps") {
		t.Fatalf("default step limit not in the prompt:\n%s", s.SystemPrompt)
	}
	if _, errOut, code := c.run("", "run", "--mode", "slow", "x"); code != exitUsage || !strings.Contains(errOut, "use tools, thinking, flash or self-reasoning") {
		t.Fatalf("bad mode: exit %d %s", code, errOut)
	}
}

// --messages starts from a conversation; the model sees it, and a task
// argument is added as the last user message.
func TestRunFromMessages(t *testing.T) {
	msgs := filepath.Join(t.TempDir(), "conv.json")
	os.WriteFile(msgs, []byte(`[
  {"role": "user", "content": "Remember the number 7."},
  {"role": "assistant", "content": "Noted: 7."},
  {"role": "user", "content": "What number did I give you?"}
]`), 0o644)
	c := newCLI(t)
	script := writeSteps(t, `{"text":"You gave me 7.","expect":{"last_message_contains":"What number did I give you?"}}`)
	out, errOut, code := c.run("", "run", "--messages", msgs, "--model", "script:"+script, "--dir", t.TempDir())
	if code != exitCompleted || !strings.Contains(out, "You gave me 7.") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if s := showStart(t, c); s.Task != "What number did I give you?" {
		t.Fatalf("task %q", s.Task)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c9","content":"y"}]`), 0o644)
	if _, errOut, code := c.run("", "run", "--messages", bad, "--model", "script:"+script, "--dir", t.TempDir()); code == exitCompleted || !strings.Contains(errOut, "no earlier assistant message made") {
		t.Fatalf("bad conversation: exit %d %s", code, errOut)
	}
}

// GOAL_COMPLETE ends a tools-mode session with the text after it.
func TestGoalCompleteInToolsMode(t *testing.T) {
	c := newCLI(t)
	script := writeSteps(t, `{"text":"Checked everything.\nGOAL_COMPLETE: the config is valid"}`)
	out, errOut, code := c.run("", "run", "--model", "script:"+script, "--dir", t.TempDir(), "check the config")
	if code != exitCompleted || strings.TrimSpace(out) != "the config is valid" {
		t.Fatalf("exit %d\n%q\n%s", code, out, errOut)
	}
}

// With --context-window, a long session is condensed instead of
// overflowing the window, and the condensation is in the log.
func TestLongSessionIsCondensed(t *testing.T) {
	dump := `{"tool_calls":[{"name":"execute_command","arguments":{"command":"seq 1 %d"}}]}`
	var steps []string
	for i := range 6 {
		steps = append(steps, fmt.Sprintf(dump, 600+i))
	}
	steps = append(steps, `{"text":"done"}`)
	c := newCLI(t)
	script := writeSteps(t, steps...)
	_, errOut, code := c.run("", "run", "--yes", "--no-progress", "0", "--context-window", "6000", "--model", "script:"+script, "--dir", t.TempDir(), "count")
	if code != exitCompleted {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	events, _, _ := c.run("", "sessions", "show", "--events", sessionID(t, c))
	if !strings.Contains(events, `"type":"conversation.condensed"`) {
		t.Fatalf("no condensation in the log:\n%.2000s", events)
	}
}
