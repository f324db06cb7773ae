package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/teststop"
)

// rewoundAnswer is POST /v1/sessions/{id}/rewind's answer.
type rewoundAnswer struct {
	SessionID    string `json:"session_id"`
	At           int    `json:"at"`
	Files        []struct{ Path, Change string }
	RewoundSteps []int `json:"rewound_steps"`
	Resumed      bool  `json:"resumed"`
}

// The front door, through the built binary and real HTTP: a
// session edits files over 8 steps on `agentloop serve`; a rewind to
// step 3 (after a dry run that changes nothing) restores the files byte
// for byte, the model's next request holds exactly the conversation of
// steps 1-3 plus the new message, and the state keeps steps 4-9 marked
// rewound. Then a rewind killed with SIGKILL right after it was recorded
// is finished by the restarted server.
func TestRewindOnTheServer(t *testing.T) {
	srv, wm := startWireModel(t, eightWrites)
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=k")
	root := t.TempDir()
	serveArgs := []string{"--yes", "--workspaces", root, "--model", "openai/m", "--base-url", srv.URL + "/v1"}
	s := c.serve(serveArgs...)
	ws := filepath.Join(root, "edits")
	id := startEditSession(t, s, ws)
	if st := s.waitFor(t, id, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("the session ended %s", st)
	}
	original := len(wm.requests())
	stepThree := map[string]string{"seed.txt": "seed\n", "f0.txt": "step 1\n", "f1.txt": "step 2\n", "f2.txt": "step 3\n"}
	atEight := readTree(t, ws)

	rewind := func(srv *serving, body string) rewoundAnswer {
		t.Helper()
		code, out := srv.post(t, "/v1/sessions/"+id+"/rewind", body)
		if code != 200 {
			t.Fatalf("rewind %s: %d %s", body, code, out)
		}
		var r rewoundAnswer
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	dry := rewind(s, `{"at":3,"dry_run":true}`)
	if dry.SessionID != id || dry.Resumed || !reflect.DeepEqual(dry.RewoundSteps, []int{4, 5, 6, 7, 8, 9}) ||
		fmt.Sprint(dry.Files) != "[{f0.txt modified} {f1.txt modified} {late.txt deleted}]" {
		t.Fatalf("dry run: %+v", dry)
	}
	// The same through the CLI against the server.
	out, errOut, code := c.run("", "sessions", "rewind", id, "--at", "3", "--dry-run", "--server", s.url)
	if code != 0 || !strings.Contains(out, "steps 4-9 are set aside, 3 files change") || !strings.Contains(out, "deleted   late.txt (goes away)") {
		t.Fatalf("sessions rewind --dry-run --server: %d\n%s\n%s", code, out, errOut)
	}
	if got := readTree(t, ws); !reflect.DeepEqual(got, atEight) {
		t.Fatalf("a dry run changed the files: %v", got)
	}

	res := rewind(s, `{"at":3,"message":"just answer"}`)
	if !res.Resumed || len(res.Files) != 3 {
		t.Fatalf("rewind: %+v", res)
	}
	if st := s.waitFor(t, id, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("after the rewind the session ended %s", st)
	}
	if got := readTree(t, ws); !reflect.DeepEqual(got, stepThree) {
		t.Fatalf("files after the rewind:\n got %v\nwant %v", got, stepThree)
	}
	reqs := wm.requests()
	want := append(append([]any(nil), reqs[3]...), map[string]any{"role": "user", "content": "just answer"})
	if len(reqs) != original+1 || !reflect.DeepEqual(reqs[original], want) {
		a, _ := json.MarshalIndent(reqs[len(reqs)-1], "", " ")
		b, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("%d requests after the rewind; the model read:\n%s\nwant step 4's request (steps 1-3) and the message:\n%s", len(reqs)-original, a, b)
	}
	if answer, marks := rewoundMarks(t, s.url, id); answer != "answered after the rewind" || marks != "1:false 2:false 3:false 4:true 5:true 6:true 7:true 8:true 9:true 4:false" {
		t.Fatalf("state after the rewind: answer %q, iterations %v", answer, marks)
	}

	// Killed right after the next rewind is recorded, before any file is
	// restored: the restarted server restores them and runs the session.
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
	os.WriteFile(filepath.Join(ws, "f0.txt"), []byte("a person's edit\n"), 0o644)
	c.env = append(c.env, teststop.Env+"=rewind-after-commit")
	s = c.serve(serveArgs...)
	c.env = c.env[:len(c.env)-1]
	posted := make(chan struct{})
	go func() {
		defer close(posted)
		// The request never gets an answer: the server is killed.
		http.Post(s.url+"/v1/sessions/"+id+"/rewind", "application/json", strings.NewReader(`{"at":2,"message":"just answer"}`))
	}()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(s.errText(), "stopped at rewind-after-commit"); {
		if time.Now().After(deadline) {
			t.Fatalf("the rewind never reached its commit:\n%s", s.errText())
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.wait(t)
	<-posted
	if got := readTree(t, ws)["f0.txt"]; got != "a person's edit\n" {
		t.Fatalf("files changed before the kill: f0.txt %q", got)
	}
	s = c.serve(serveArgs...)
	if st := s.waitFor(t, id, "completed", "failed", "error"); st != "completed" {
		t.Fatalf("after the restart the session ended %s", st)
	}
	stepTwo := map[string]string{"seed.txt": "seed\n", "f0.txt": "step 1\n", "f1.txt": "step 2\n"}
	if got := readTree(t, ws); !reflect.DeepEqual(got, stepTwo) {
		t.Fatalf("files after the restart:\n got %v\nwant step 2's %v", got, stepTwo)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(c.db), "checkpoints", id+".restore.json")); !os.IsNotExist(err) {
		t.Fatalf("the restore note outlived the restart: %v", err)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
}
