package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/temporal"
	"github.com/agentloop/agentloop/temporal/temporaltest"
)

// The server asks the Temporal engine whether a session's workflow is
// open before it rewinds the session.
var _ service.WorkflowEngine = (*temporal.Engine)(nil)

// afterRewind is what the model is told after the rewind: it writes
// after.txt, then answers.
const afterRewind = "rewound: write after.txt"

// rewindScript is eightWrites until a person's afterRewind, then one
// write and the answer. When the model is first asked after the rewind
// it records the workspace's files as they are at that moment (seen).
type rewindScript struct {
	ws   string
	mu   sync.Mutex
	seen map[string]string
}

func (rs *rewindScript) decide(msgs []any) map[string]any {
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] == "user" && last["content"] == afterRewind {
		rs.mu.Lock()
		if rs.seen == nil {
			rs.seen = filesNow(rs.ws)
		}
		rs.mu.Unlock()
		return writeCall(99, "after.txt", "after the rewind\n")
	}
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "user" && mm["content"] == afterRewind {
			return map[string]any{"role": "assistant", "content": "answered after the rewind"}
		}
	}
	return eightWrites(msgs)
}

func (rs *rewindScript) filesSeen() map[string]string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.seen
}

// filesNow reads every file under dir as path → content (nil when it
// cannot be read); safe off the test's goroutine.
func filesNow(dir string) map[string]string {
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
		return nil
	}
	return out
}

// Rewind where sessions run on Temporal: a session edits files over 8
// steps on a real `agentloop worker`; the real `agentloop serve` (engine
// temporal, checkpoints in a directory it shares with the worker)
// rewinds it over HTTP to step 3 with a message. The worker runs it on:
// when the model is next asked, the files are step 3's byte for byte, and
// its request holds exactly steps 1-3's conversation plus the message;
// then it writes one more file and ends, with steps 4-9 set aside.
func TestRewindOnTemporal(t *testing.T) {
	hostPort := temporaltest.Start(t)
	root := t.TempDir()
	ws := filepath.Join(root, "edits")
	rs := &rewindScript{ws: ws}
	srv, wm := startWireModel(t, rs.decide)
	c := newCLI(t)
	c.db = pgtest.URL(t)
	c.env = append(c.env, "OPENAI_API_KEY=k")
	shared := filepath.Join(t.TempDir(), "checkpoints")
	w := c.start("worker", "--temporal", hostPort, "--db", c.db, "--task-queue", "rewinds", "--checkpoints", shared)
	defer func() { w.cmd.Process.Signal(syscall.SIGTERM); w.wait(t) }()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(w.err.String(), "agentloop worker: running"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not start:\n%s", w.err.String())
		}
	}
	s := c.serve("--engine", "temporal", "--temporal", hostPort, "--task-queue", "rewinds", "--workspaces", root, "--yes",
		"--checkpoints", shared, "--model", "openai/m", "--base-url", srv.URL+"/v1")
	defer func() { s.cmd.Process.Signal(syscall.SIGTERM); s.wait(t) }()

	id := startEditSession(t, s, ws)
	waitEnded := func() string {
		t.Helper()
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if st := statusOf(t, s.url, id); st == "completed" || st == "failed" || st == "error" {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %s is %s\nworker: %s\nserver: %s", id, statusOf(t, s.url, id), w.err.String(), s.errText())
			}
		}
	}
	if st := waitEnded(); st != "completed" {
		t.Fatalf("the session ended %s\nworker: %s", st, w.err.String())
	}
	original := len(wm.requests())
	stepThree := map[string]string{"seed.txt": "seed\n", "f0.txt": "step 1\n", "f1.txt": "step 2\n", "f2.txt": "step 3\n"}

	code, out := s.post(t, "/v1/sessions/"+id+"/rewind", `{"at":3,"dry_run":true}`)
	var dry rewoundAnswer
	json.Unmarshal([]byte(out), &dry)
	if code != 200 || dry.Resumed || !reflect.DeepEqual(dry.RewoundSteps, []int{4, 5, 6, 7, 8, 9}) ||
		fmt.Sprint(dry.Files) != "[{f0.txt modified} {f1.txt modified} {late.txt deleted}]" {
		t.Fatalf("dry run: %d %s", code, out)
	}
	if len(wm.requests()) != original {
		t.Fatal("a dry run asked the model")
	}

	code, out = s.post(t, "/v1/sessions/"+id+"/rewind", fmt.Sprintf(`{"at":3,"message":%q}`, afterRewind))
	var res rewoundAnswer
	json.Unmarshal([]byte(out), &res)
	if code != 200 || !res.Resumed || len(res.Files) != 3 || !reflect.DeepEqual(res.RewoundSteps, []int{4, 5, 6, 7, 8, 9}) {
		t.Fatalf("rewind: %d %s", code, out)
	}
	if st := waitEnded(); st != "completed" {
		t.Fatalf("after the rewind the session ended %s\nworker: %s", st, w.err.String())
	}
	if seen := rs.filesSeen(); !reflect.DeepEqual(seen, stepThree) {
		t.Fatalf("the files when the worker ran the session on:\n got %v\nwant step 3's %v", seen, stepThree)
	}
	wantEnd := map[string]string{"after.txt": "after the rewind\n"}
	for k, v := range stepThree {
		wantEnd[k] = v
	}
	if got := readTree(t, ws); !reflect.DeepEqual(got, wantEnd) {
		t.Fatalf("files at the end:\n got %v\nwant %v", got, wantEnd)
	}
	reqs := wm.requests()
	want := append(append([]any(nil), reqs[3]...), map[string]any{"role": "user", "content": afterRewind})
	if len(reqs) != original+2 || !reflect.DeepEqual(reqs[original], want) {
		a, _ := json.MarshalIndent(reqs[original:], "", " ")
		b, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("%d requests after the rewind; the model read:\n%s\nwant step 4's request (steps 1-3) and the message:\n%s", len(reqs)-original, a, b)
	}
	if answer, marks := rewoundMarks(t, s.url, id); answer != "answered after the rewind" || marks != "1:false 2:false 3:false 4:true 5:true 6:true 7:true 8:true 9:true 4:false 5:false" {
		t.Fatalf("state after the rewind: answer %q, iterations %v", answer, marks)
	}
	if _, err := os.Stat(filepath.Join(shared, id+".restore.json")); !os.IsNotExist(err) {
		t.Fatalf("the restore note outlived the rewind: %v", err)
	}
}
