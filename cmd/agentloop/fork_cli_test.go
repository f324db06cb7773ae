package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// forkModels is an OpenAI-compatible server on loopback playing two
// models. "orig" writes f{(i-1)%3}.txt = "step i" at step i for 8 steps,
// then answers; "fork" writes forked.txt once, then answers. It keeps
// every request's messages by model.
type forkModels struct {
	mu   sync.Mutex
	reqs map[string][][]any
}

func startForkModels(t *testing.T) (*httptest.Server, *forkModels) {
	fm := &forkModels{reqs: map[string][][]any{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []any  `json:"messages"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request: %v", err)
		}
		fm.mu.Lock()
		fm.reqs[body.Model] = append(fm.reqs[body.Model], body.Messages)
		fm.mu.Unlock()
		n := assistantTurns(body.Messages)
		var msg map[string]any
		switch {
		case body.Model == "orig" && n < 8:
			msg = writeCall(n+1, fmt.Sprintf("f%d.txt", n%3), fmt.Sprintf("step %d\n", n+1))
		case body.Model == "fork" && n == 5:
			msg = writeCall(n+1, "forked.txt", "fork\n")
		default:
			msg = map[string]any{"role": "assistant", "content": body.Model + " done"}
		}
		replyChat(w, body.Model, body.Stream, msg)
	}))
	t.Cleanup(srv.Close)
	return srv, fm
}

func (fm *forkModels) requests(name string) [][]any {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	return append([][]any(nil), fm.reqs[name]...)
}

// readTree reads every file under dir (no directories) as path → content.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A session edits files over 8 steps; a fork at step 5 with another model
// and a new message gets the workspace of step 5 and exactly the
// conversation of steps 1-5, runs to completion, and leaves the original's
// log and workspace as they were.
func TestForkAtStepFromTheCommandLine(t *testing.T) {
	srv, fm := startForkModels(t)
	c := newCLI(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "seed.txt"), []byte("seed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := c.run("", "run", "--yes", "--model", "openai/orig", "--base-url", srv.URL+"/v1", "--api-key", "k", "--dir", ws, "edit the files")
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	id := sessionID(t, c)
	wantOrig := map[string]string{"seed.txt": "seed\n", "f0.txt": "step 7\n", "f1.txt": "step 8\n", "f2.txt": "step 6\n"}
	if got := readTree(t, ws); !reflect.DeepEqual(got, wantOrig) {
		t.Fatalf("original workspace %v", got)
	}
	origLog, _, _ := c.run("", "sessions", "show", id, "--events", "--json")
	if n := strings.Count(origLog, `"type":"workspace.checkpointed"`); n != 9 {
		t.Fatalf("%d checkpoints recorded, want 9 (as found, then after each of 8 steps)", n)
	}

	forkDir := filepath.Join(t.TempDir(), "fork")
	out, errOut, code = c.run("", "sessions", "fork", id, "--at", "5", "--yes", "--model", "openai/fork", "--api-key", "k", "--message", "try another way", "--dir", forkDir)
	if code != 0 {
		t.Fatalf("fork: %d\n%s\n%s", code, out, errOut)
	}
	// The fork's workspace was checkpoint 5's; then the fork wrote forked.txt.
	want := map[string]string{"seed.txt": "seed\n", "f0.txt": "step 4\n", "f1.txt": "step 5\n", "f2.txt": "step 3\n", "forked.txt": "fork\n"}
	if got := readTree(t, forkDir); !reflect.DeepEqual(got, want) {
		t.Errorf("fork workspace %v, want %v", got, want)
	}
	orig, fork := fm.requests("orig"), fm.requests("fork")
	if len(orig) != 9 || len(fork) != 2 {
		t.Fatalf("%d requests to orig, %d to fork", len(orig), len(fork))
	}
	// The original's 6th request held steps 1-5; the fork's first holds
	// exactly that and the new message.
	first := fork[0]
	if !reflect.DeepEqual(first[:len(first)-1], orig[5]) {
		a, _ := json.MarshalIndent(first, "", " ")
		b, _ := json.MarshalIndent(orig[5], "", " ")
		t.Errorf("fork's first request:\n%s\noriginal's sixth:\n%s", a, b)
	}
	if last, _ := first[len(first)-1].(map[string]any); last["role"] != "user" || last["content"] != "try another way" {
		t.Errorf("fork's first request ends with %v", last)
	}
	// The original is untouched.
	if got := readTree(t, ws); !reflect.DeepEqual(got, wantOrig) {
		t.Errorf("original workspace changed: %v", got)
	}
	if after, _, _ := c.run("", "sessions", "show", id, "--events", "--json"); after != origLog {
		t.Error("the original's log changed")
	}
	list, _, _ := c.run("", "sessions", "list", "--json")
	var sessions []struct{ ID, Status string }
	if err := json.Unmarshal([]byte(list), &sessions); err != nil || len(sessions) != 2 {
		t.Fatalf("sessions list: %v %s", err, list)
	}
	forkID := sessions[0].ID
	if forkID == id || sessions[0].Status != "completed" {
		t.Errorf("fork %+v", sessions[0])
	}
	fl, _, _ := c.run("", "sessions", "show", forkID, "--events", "--json")
	if i := strings.Index(fl, `"forked_from"`); i < 0 || !strings.HasPrefix(fl[i:], fmt.Sprintf(`"forked_from":{"id":%q,"iteration":5}`, id)) {
		t.Errorf("fork's session.started lacks forked_from %s at 5:\n%.3000s", id, fl)
	}
	if !strings.Contains(fl, `"answer":"fork done"`) {
		t.Errorf("fork's log lacks its answer")
	}

	// Bad input: a step that never finished, a directory that exists.
	if _, e, code := c.run("", "sessions", "fork", id, "--at", "12", "--dir", filepath.Join(t.TempDir(), "x")); code == 0 || !strings.Contains(e, "no finished step 12") {
		t.Errorf("fork at 12: %d %s", code, e)
	}
	if _, e, code := c.run("", "sessions", "fork", id, "--at", "2", "--dir", forkDir); code == 0 || !strings.Contains(e, "already exists") {
		t.Errorf("fork into an existing directory: %d %s", code, e)
	}
	if list2, _, _ := c.run("", "sessions", "list", "--json"); strings.Count(list2, `"id"`) != strings.Count(list, `"id"`) {
		t.Error("a refused fork created a session")
	}
}
