package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

// PostgreSQL restarted while a served session runs (every connection cut,
// the database down for a second): the session goes on once the database
// is back — or pauses saying why and is resumed — and its log has no gap,
// no step twice.
func TestPostgresRestartedMidSession(t *testing.T) {
	pg := pgtest.Own(t)
	c := newCLI(t)
	c.db = pg.URL
	ws := t.TempDir()
	s := c.serve("--allow-script-models", "--workspaces", ws, "--yes", "--lease-ttl", "2s")
	const steps = 12
	var script []string
	for i := range steps {
		script = append(script, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}],"delay":"250ms"}`, i, i))
	}
	model := writeScript(t, `{"steps":[`+strings.Join(append(script, `{"text":"wrote them all"}`), ",")+`]}`)
	var created struct{ ID string }
	if code := apiCall(t, "POST", s.url+"/v1/sessions", fmt.Sprintf(`{"task":"write files","model":"script:%s","workspace":"w","max_iterations":20}`, model), &created); code != 201 {
		t.Fatalf("create: %d", code)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var sum struct {
			Iteration int `json:"current_iteration"`
		}
		apiCall(t, "GET", s.url+"/v1/sessions/"+created.ID, "", &sum)
		if sum.Iteration >= 3 {
			break
		}
		if time.Now().After(deadline) {
			var raw map[string]any
			apiCall(t, "GET", s.url+"/v1/sessions/"+created.ID, "", &raw)
			t.Fatalf("the session did not reach step 3: %v", raw)
		}
	}
	if err := pg.Restart(time.Second); err != nil {
		t.Fatal(err)
	}
	status := ""
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var sum struct{ Status, Reason string }
		if apiCall(t, "GET", s.url+"/v1/sessions/"+created.ID, "", &sum) != 200 {
			continue
		}
		status = sum.Status + " " + sum.Reason
		if sum.Status == "paused" {
			t.Logf("paused (%s) by the restart; resuming", sum.Reason)
			apiCall(t, "POST", s.url+"/v1/sessions/"+created.ID+"/resume", `{}`, nil)
		}
		if sum.Status == "completed" {
			break
		}
	}
	if !strings.HasPrefix(status, "completed") {
		t.Fatalf("after the restart the session is %q\n%s", status, s.errText())
	}
	events := allEvents(t, s.url, created.ID)
	finished := map[string]int{}
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
		if e.Type == "tool.finished" {
			var d struct {
				CallID string `json:"call_id"`
			}
			_ = json.Unmarshal(e.Data, &d)
			if finished[d.CallID]++; finished[d.CallID] > 1 {
				t.Fatalf("tool call %s finished twice", d.CallID)
			}
		}
	}
	if !strings.Contains(s.errText(), "session stopped: it is taken up again") {
		t.Errorf("the server did not say the session stopped on the fault")
	}
	if n := strings.Count(fmt.Sprint(events), "session.ended"); n > 1 {
		t.Fatalf("%d session.ended", n)
	}
}

// The disk under the sessions database fills up mid-session (a 4 MB
// tmpfs, as root): the run stops with a message saying the disk is full
// and what to do, the database is intact, and once space is freed
// `sessions resume` finishes the session with no step lost or done twice.
func TestDiskFullStopsClearlyAndResumes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	c := newCLI(t)
	c.db = filepath.Join(mnt, "s.db")
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("0123456789abcdef\n", 1800)), 0o644); err != nil { // ~30 KB of output a read
		t.Fatal(err)
	}
	const steps = 40
	var script []string
	for i := range steps {
		script = append(script, fmt.Sprintf(`{"tool_calls":[{"name":"read_file","arguments":{"path":"big.txt","start_line":%d}}]}`, i+1))
	}
	model := writeScript(t, `{"steps":[`+strings.Join(append(script, `{"text":"read it all"}`), ",")+`]}`)
	// The first run makes the database; then a filler leaves ~300 KB.
	if _, errOut, code := c.run("", "run", "--model", "script:"+writeSteps(t, `{"text":"hi"}`), "warm up"); code != 0 {
		t.Fatalf("warm-up: %d %s", code, errOut)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize-300<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := c.run("", "run", "--yes", "--no-progress", "0", "--max-iterations", "50", "--dir", ws, "--model", "script:"+model, "read the big file many times")
	if code == 0 {
		t.Fatalf("the run did not notice the full disk:\n%s", errOut)
	}
	if !strings.Contains(errOut, "is full") || !strings.Contains(errOut, "Free some space") || !strings.Contains(errOut, "sessions resume") {
		t.Fatalf("exit %d without saying the disk is full and what to do:\n%s", code, errOut)
	}
	t.Logf("exit %d:\n%s", code, lastLines(errOut, 6))
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	out, _, _ := c.run("", "sessions", "list", "--json")
	var list []struct{ ID, Task string }
	_ = json.Unmarshal([]byte(out), &list)
	id := ""
	for _, s := range list {
		if strings.HasPrefix(s.Task, "read the big file") {
			id = s.ID
		}
	}
	if id == "" {
		t.Fatalf("the session is not in the list: %s", out)
	}
	out, errOut, code = c.run("", "sessions", "resume", "--model", "script:"+model, id)
	if code != 0 || !strings.Contains(out, "read it all") {
		t.Fatalf("resume after freeing space: exit %d\n%s\n%s", code, out, lastLines(errOut, 10))
	}
	checkLog(t, c.db, id)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// The sessions database deleted under a running server (by another
// process): SQLite would go on writing to the deleted file and lose it
// all; instead the server refuses to write, saying what happened and what
// to do, and works again once restarted.
func TestDatabaseDeletedUnderTheServer(t *testing.T) {
	c := newCLI(t)
	s := c.serve("--allow-script-models", "--yes", "--workspaces", t.TempDir())
	model := "script:" + writeSteps(t, `{"text":"hi"}`)
	var created struct{ ID string }
	if code := apiCall(t, "POST", s.url+"/v1/sessions", `{"task":"before","model":"`+model+`"}`, &created); code != 201 {
		t.Fatalf("create: %d", code)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(c.db + suffix)
	}
	time.Sleep(1100 * time.Millisecond) // the writer looks at most once a second
	code, body := s.post(t, "/v1/sessions", `{"task":"after","model":"`+model+`"}`)
	if code != 503 || !strings.Contains(body, "cannot save sessions now") {
		t.Fatalf("a session started on a deleted database: %d %s", code, body)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) { // the log comes through a pipe
		log := s.errText()
		if strings.Contains(log, "deleted or replaced") && strings.Contains(log, "put the database back") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's log does not say what happened:\n%s", log)
		}
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
	s2 := c.serve("--allow-script-models", "--yes", "--workspaces", t.TempDir())
	defer func() { _ = s2.cmd.Process.Signal(syscall.SIGTERM); s2.wait(t) }()
	if code, body := s2.post(t, "/v1/sessions", `{"task":"after a restart","model":"`+model+`"}`); code != 201 {
		t.Fatalf("after a restart: %d %s", code, body)
	}
}
