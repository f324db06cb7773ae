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
	"time"

	"github.com/agentloop/agentloop/internal/teststop"
)

// wireModel is an OpenAI-compatible server on loopback whose reply to
// each request decide picks from the request's messages; it keeps every
// request's messages.
type wireModel struct {
	mu   sync.Mutex
	reqs [][]any
}

func startWireModel(t *testing.T, decide func(msgs []any) map[string]any) (*httptest.Server, *wireModel) {
	wm := &wireModel{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Stream   bool  `json:"stream"`
			Messages []any `json:"messages"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request: %v", err)
		}
		wm.mu.Lock()
		wm.reqs = append(wm.reqs, body.Messages)
		wm.mu.Unlock()
		replyChat(w, "m", body.Stream, decide(body.Messages))
	}))
	t.Cleanup(srv.Close)
	return srv, wm
}

func (wm *wireModel) requests() [][]any {
	wm.mu.Lock()
	defer wm.mu.Unlock()
	return append([][]any(nil), wm.reqs...)
}

// eightWrites writes one file per step for eight steps (step 6 makes
// late.txt), then answers; after a person's message "just answer" it
// answers at once.
func eightWrites(msgs []any) map[string]any {
	if last, ok := msgs[len(msgs)-1].(map[string]any); ok && last["role"] == "user" && last["content"] == "just answer" {
		return map[string]any{"role": "assistant", "content": "answered after the rewind"}
	}
	n := assistantTurns(msgs)
	switch {
	case n == 5:
		return writeCall(n+1, "late.txt", "step 6\n")
	case n < 8:
		return writeCall(n+1, fmt.Sprintf("f%d.txt", n%3), fmt.Sprintf("step %d\n", n+1))
	}
	return map[string]any{"role": "assistant", "content": "done"}
}

// SIGKILL at the worst points of a rewind — after the restore is noted
// but before the rewind is recorded, right after it is recorded, and
// halfway through restoring the files — then a restart (agentloop
// sessions recover): the session ends up with the old state or the new
// one, files and log, never a mix.
func TestRewindKilledHalfwayIsFinishedOrUndone(t *testing.T) {
	stepThree := map[string]string{"seed.txt": "seed\n", "f0.txt": "step 1\n", "f1.txt": "step 2\n", "f2.txt": "step 3\n"}
	for _, tc := range []struct {
		point, message string
		recorded       bool // the rewind is in the log when the process dies
	}{
		{"rewind-before-commit", "", false},
		{"rewind-after-commit", "", true},
		{"rewind-restore-between-deletes-and-writes", "", true},
		{"rewind-after-commit", "just answer", true},
	} {
		name := tc.point
		if tc.message != "" {
			name += "-resumed"
		}
		t.Run(name, func(t *testing.T) {
			srv, wm := startWireModel(t, eightWrites)
			c := newCLI(t)
			c.env = append(c.env, "OPENAI_API_KEY=k") // for the process that resumes it
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "seed.txt"), []byte("seed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, errOut, code := c.run("", "run", "--yes", "--model", "openai/m", "--base-url", srv.URL+"/v1", "--api-key", "k", "--dir", ws, "edit"); code != 0 {
				t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
			}
			id := sessionID(t, c)
			original := len(wm.requests())
			// A person's edits since: a new file, and one of step 3's removed.
			os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("note\n"), 0o644)
			os.Remove(filepath.Join(ws, "f2.txt"))
			before := readTree(t, ws)
			logBefore, _, _ := c.run("", "sessions", "show", "--events", id)

			args := []string{"sessions", "rewind", id, "--at", "3", "--yes", "--api-key", "k"}
			if tc.message != "" {
				args = append(args, "--message", tc.message)
			}
			c.env = append(c.env, teststop.Env+"="+tc.point)
			p := c.start(args...)
			c.env = c.env[:len(c.env)-1]
			for deadline := time.Now().Add(time.Minute); !strings.Contains(p.err.String(), "stopped at "+tc.point); {
				if time.Now().After(deadline) {
					t.Fatalf("the rewind never reached %s:\n%s", tc.point, p.err.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			p.cmd.Process.Kill() // SIGKILL
			p.wait(t)

			note := filepath.Join(filepath.Dir(c.db), "checkpoints", id+".restore.json")
			if _, err := os.Stat(note); err != nil {
				t.Fatalf("no restore note after the kill: %v", err)
			}
			logMid, _, _ := c.run("", "sessions", "show", "--events", id)
			if got := strings.Count(logMid, `"type":"session.rewound"`); got != map[bool]int{false: 0, true: 1}[tc.recorded] {
				t.Fatalf("killed at %s: %d session.rewound in the log", tc.point, got)
			}
			mid := readTree(t, ws)
			switch tc.point {
			case "rewind-restore-between-deletes-and-writes":
				// Killed halfway: the files are a mix until the restart.
				if _, ok := mid["late.txt"]; ok || mid["f0.txt"] != "step 7\n" {
					t.Fatalf("killed halfway through the restore, the workspace is %v", mid)
				}
			default:
				if !reflect.DeepEqual(mid, before) {
					t.Fatalf("killed at %s, the files changed: %v", tc.point, mid)
				}
			}

			out, errOut, code := c.run("", "sessions", "recover")
			if !strings.Contains(errOut, "settled the rewind of session "+id) && tc.message == "" {
				t.Errorf("recover did not say it settled the rewind:\n%s", errOut)
			}
			if _, err := os.Stat(note); !os.IsNotExist(err) {
				t.Fatalf("the restore note is still there after recover: %v\n%s", err, errOut)
			}
			after := readTree(t, ws)
			logAfter, _, _ := c.run("", "sessions", "show", "--events", id)
			state, _, _ := c.run("", "sessions", "show", "--json", id)
			var st struct{ Status, Reason, Answer string }
			json.Unmarshal([]byte(state), &st)
			switch {
			case !tc.recorded:
				// Undone: the old files and the old log.
				if !reflect.DeepEqual(after, before) || logAfter != logBefore || st.Status != "completed" {
					t.Fatalf("an unrecorded rewind was not undone: %s, files %v", st.Status, after)
				}
			case tc.message == "":
				// Finished: step 3's files, paused to be resumed.
				if !reflect.DeepEqual(after, stepThree) || st.Status != "paused" || st.Reason != "rewound" {
					t.Fatalf("a recorded rewind was not finished: %s (%s), files %v\n%s\n%s", st.Status, st.Reason, after, out, errOut)
				}
			default:
				// Finished, then resumed with the message: the model read
				// step 4's conversation and the message, and answered.
				if code != 0 || !reflect.DeepEqual(after, stepThree) || st.Status != "completed" || st.Answer != "answered after the rewind" {
					t.Fatalf("a recorded rewind with a message: exit %d, %s %q, files %v\n%s\n%s", code, st.Status, st.Answer, after, out, errOut)
				}
				reqs := wm.requests()
				want := append(append([]any(nil), reqs[3]...), map[string]any{"role": "user", "content": "just answer"})
				if len(reqs) != original+1 || !reflect.DeepEqual(reqs[original], want) {
					t.Fatalf("after recovery the model got %d requests; the first:\n%v\nwant\n%v", len(reqs)-original, reqs[len(reqs)-1], want)
				}
			}
			if got := strings.Count(logAfter, `"type":"session.rewound"`); got != map[bool]int{false: 0, true: 1}[tc.recorded] {
				t.Fatalf("after recover: %d session.rewound in the log", got)
			}
		})
	}
}
