package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A session edits files over 8 steps, then answers. agentloop sessions rewind --at 3
// --dry-run lists what would change and changes nothing; the rewind puts
// the files back byte for byte as step 3 left them (a file made since is
// removed, an ignored one kept) and leaves the session paused; a second
// rewind with a message resumes it, and the model's next request holds
// exactly the conversation of steps 1-3 plus the message.
func TestRewindFromTheCommandLine(t *testing.T) {
	srv, fm := startForkModels(t)
	c := newCLI(t)
	ws := t.TempDir()
	write := func(rel, content string) {
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("seed.txt", "seed\n")
	write(".gitignore", "*.log\n")
	out, errOut, code := c.run("", "run", "--yes", "--model", "openai/orig", "--base-url", srv.URL+"/v1", "--api-key", "k", "--dir", ws, "edit the files")
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	id := sessionID(t, c)
	original := len(fm.requests("orig"))
	write("notes.txt", "a person's note\n")
	write("build.log", "ignored\n")

	out, errOut, code = c.run("", "sessions", "rewind", id, "--at", "3", "--dry-run")
	if code != 0 {
		t.Fatalf("dry run: %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"steps 4-9 are set aside", "4 files change", "modified  f0.txt", "modified  f1.txt", "modified  f2.txt", "deleted   notes.txt", "dry run"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = c.run("", "sessions", "rewind", id, "--at", "3", "--dry-run", "--json")
	var dry struct {
		SessionID    string `json:"session_id"`
		At           int    `json:"at"`
		Files        []struct{ Path, Change string }
		RewoundSteps []int `json:"rewound_steps"`
		Resumed      bool  `json:"resumed"`
	}
	if err := json.Unmarshal([]byte(out), &dry); err != nil || code != 0 || dry.SessionID != id || dry.At != 3 || len(dry.Files) != 4 ||
		!reflect.DeepEqual(dry.RewoundSteps, []int{4, 5, 6, 7, 8, 9}) || dry.Resumed {
		t.Fatalf("dry run --json: %d %v\n%s\n%s", code, err, out, errOut)
	}
	if got := readTree(t, ws)["f0.txt"]; got != "step 7\n" {
		t.Fatalf("a dry run changed f0.txt to %q", got)
	}

	out, errOut, code = c.run("", "sessions", "rewind", id, "--at", "3")
	if code != 0 || !strings.Contains(out, "rewound to the end of step 3") || !strings.Contains(out, "sessions resume "+id) {
		t.Fatalf("rewind: %d\n%s\n%s", code, out, errOut)
	}
	want := map[string]string{"seed.txt": "seed\n", ".gitignore": "*.log\n", "build.log": "ignored\n", "f0.txt": "step 1\n", "f1.txt": "step 2\n", "f2.txt": "step 3\n"}
	if got := readTree(t, ws); !reflect.DeepEqual(got, want) {
		t.Fatalf("workspace after the rewind:\n got %v\nwant %v", got, want)
	}
	show, _, _ := c.run("", "sessions", "show", id)
	if n := strings.Count(show, "rewound: set aside"); n != 6 || !strings.Contains(show, "paused") {
		t.Fatalf("sessions show marks %d steps rewound, want 6:\n%s", n, show)
	}
	if len(fm.requests("orig")) != original {
		t.Fatal("a rewind without a message called the model")
	}

	// Paused now: a rewind with a message resumes it here.
	out, errOut, code = c.run("", "sessions", "rewind", id, "--at", "3", "--message", "try another way", "--yes", "--api-key", "k")
	if code != 0 || !strings.Contains(out, "orig done") {
		t.Fatalf("rewind with a message: %d\n%s\n%s", code, out, errOut)
	}
	reqs := fm.requests("orig")
	if len(reqs) <= original {
		t.Fatal("the resumed session never called the model")
	}
	next := reqs[original]
	wantMsgs := append(append([]any(nil), reqs[3]...), map[string]any{"role": "user", "content": "try another way"})
	if !reflect.DeepEqual(next, wantMsgs) {
		a, _ := json.MarshalIndent(next, "", " ")
		b, _ := json.MarshalIndent(wantMsgs, "", " ")
		t.Fatalf("the model's request after the rewind:\n%s\nwant step 4's request (the conversation of steps 1-3) and the message:\n%s", a, b)
	}
}

func TestRewindCommandLineMistakes(t *testing.T) {
	c := newCLI(t)
	s := writeScript(t, `{"steps":[{"text":"done"}]}`)
	if _, errOut, code := c.run("", "run", "--model", "script:"+s, "--dir", t.TempDir(), "x"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	id := sessionID(t, c)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"sessions", "rewind", id}, exitUsage, "usage"},
		{[]string{"sessions", "rewind", "--at", "1"}, exitUsage, "usage"},
		{[]string{"sessions", "rewind", id, "--at", "0"}, exitUsage, "usage"},
		{[]string{"sessions", "rewind", id, "--at", "4"}, exitFailed, "no finished step 4"},
		{[]string{"sessions", "rewind", "nosuch", "--at", "1"}, exitFailed, "not found"},
	} {
		_, errOut, code := c.run("", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.says) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", tc.args, code, errOut, tc.code, tc.says)
		}
	}
}
