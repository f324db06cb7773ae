// Command killbench kills agentloop with SIGKILL at random moments and
// counts what a crash costs. Each run is one session on a loopback
// OpenAI-compatible model (replies streamed in slow chunks, then a tool
// call): S steps, each a shell command that appends its step number to a
// file (not idempotent), one of them long, and a verification command at
// the end — so a kill lands during a model stream, a tool call, a long
// command, verification or a commit. The process is killed once at a
// random time, then the session is recovered (`agentloop sessions
// recover` for the CLI; a restarted `agentloop serve`, which resumes what
// a crash left running) and checked:
//
//   - torn or duplicated events: a gap in the log, two session.ended, an
//     iteration with two model replies, a tool call finished twice (goal 0);
//   - non-idempotent tools re-run: a step's line twice in the file (goal 0);
//   - paid model calls repeated: a request for a step after the reply to
//     that step was recorded (goal 0);
//   - sessions resumed to completion (goal 100 %).
//
// Runs are spread over three targets: `agentloop run` (SQLite),
// `agentloop serve` with SQLite and `agentloop serve` with PostgreSQL (a
// throwaway server; skipped with -pg none).
//
//	go run ./bench/cmd/killbench [-runs 200] [-steps 6] [-pg URL|none] [-out FILE]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	benchresult "github.com/agentloop/agentloop/bench/internal/result"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/postgres"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/store/sqlite"
)

var (
	binary string
	steps  int
	model  *modelServer
)

type tally struct {
	runs, completed, torn, rerun, repeated int
	unrecorded                             int // killed before the session was recorded
	killedIn                               map[string]int
	failures                               []string
}

func main() {
	runs := flag.Int("runs", 200, "kills in all, spread over the targets")
	flag.IntVar(&steps, "steps", 6, "tool steps per session")
	pgURL := flag.String("pg", "", "PostgreSQL URL (default: start a throwaway server; none: skip PostgreSQL)")
	out := flag.String("out", benchresult.Path("kill"), "where the result goes (overwritten); - for standard output only")
	flag.Parse()

	dir, err := os.MkdirTemp("", "killbench")
	check(err)
	defer os.RemoveAll(dir)
	// As root, sandboxed commands run as another user, who must be able to
	// pass through to the workspaces (serve refuses to start otherwise).
	check(os.Chmod(dir, 0o711))
	binary = filepath.Join(dir, "agentloop")
	if b, err := exec.Command("go", "build", "-o", binary, "./cmd/agentloop").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s\n%v\n", b, err)
		os.Exit(1)
	}
	model = newModelServer()
	defer model.srv.Close()

	targets := []string{"run (SQLite)", "serve (SQLite)"}
	if *pgURL != "none" {
		if *pgURL == "" {
			url, stop, err := pgtest.StartServer(true)
			check(err)
			defer stop()
			*pgURL = url
		}
		targets = append(targets, "serve (PostgreSQL)")
	}
	results := map[string]*tally{}
	for _, t := range targets {
		results[t] = &tally{killedIn: map[string]int{}}
	}
	start := time.Now()
	for i := range *runs {
		target := targets[i%len(targets)]
		r := results[target]
		r.runs++
		phase, err := oneRun(i, target, filepath.Join(dir, fmt.Sprintf("run%d", i)), *pgURL, r)
		r.killedIn[phase]++
		if err != nil {
			r.failures = append(r.failures, fmt.Sprintf("run %d (%s, killed %s): %v", i, target, phase, err))
		}
		if (i+1)%20 == 0 {
			fmt.Fprintf(os.Stderr, "killbench: %d/%d runs (%s)\n", i+1, *runs, time.Since(start).Round(time.Second))
		}
	}

	w, closeOut, err := benchresult.Create(*out, "Sessions killed with SIGKILL and resumed")
	check(err)
	defer closeOut()
	fmt.Fprintf(w, "`go run ./bench/cmd/killbench -runs %d -steps %d` — %d runs in %s\n\n", *runs, steps, *runs, time.Since(start).Round(time.Second))
	fmt.Fprint(w, "Runs killed at start-up before the session was recorded have nothing to resume; they are left out of the resumed count.\n\n")
	fmt.Fprintln(w, "| target | runs | resumed to completion | torn/duplicated events | non-idempotent tools re-run | paid model calls repeated | killed during |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|")
	for _, t := range targets {
		r := results[t]
		var phases []string
		for _, p := range []string{"start-up", "model stream", "tool call", "long command", "verification", "between steps", "after the end"} {
			if r.killedIn[p] > 0 {
				phases = append(phases, fmt.Sprintf("%s %d", p, r.killedIn[p]))
			}
		}
		resumable := r.runs - r.unrecorded
		fmt.Fprintf(w, "| %s | %d | %d of %d (%.0f %%) | %d | %d | %d | %s |\n", t, r.runs, r.completed, resumable, 100*float64(r.completed)/float64(max(resumable, 1)), r.torn, r.rerun, r.repeated, strings.Join(phases, ", "))
	}
	for _, t := range targets {
		for _, f := range results[t].failures {
			fmt.Fprintln(w, "\n- "+f)
		}
	}
}

// oneRun starts a session, kills its process at a random moment, recovers
// it and checks the outcome. It returns what was under way at the kill.
func oneRun(i int, target, dir, pgURL string, r *tally) (string, error) {
	check(os.MkdirAll(dir, 0o700))
	ws := filepath.Join(dir, "ws")
	check(os.MkdirAll(ws, 0o700))
	if os.Geteuid() == 0 {
		// As root, `run` runs commands as the sandbox user (uid 65534),
		// and refuses a workspace that user cannot write: give it one.
		check(os.Chmod(dir, 0o711))
		check(os.Chown(ws, 65534, 65534))
	}
	db := filepath.Join(dir, "s.db")
	if target == "serve (PostgreSQL)" {
		db = pgURL
	}
	task := fmt.Sprintf("kill run %d", i)
	env := append(os.Environ(), "OPENAI_API_KEY=k", "XDG_CONFIG_HOME="+dir, "AGENTLOOP_CONFIG=", "AGENTLOOP_MODEL=")
	common := []string{"--db", db, "--yes", "--model", "openai/m", "--base-url", model.srv.URL + "/v1"}
	const verifyCmd = "sleep 0.3; true"
	killAfter := time.Duration(50+rand.IntN(2400)) * time.Millisecond

	var id string
	var phase string
	if target == "run (SQLite)" {
		cmd := exec.Command(binary, append(append([]string{"run"}, common...), "--verify", verifyCmd, "--dir", ws, task)...)
		cmd.Env = env
		check(cmd.Start())
		time.Sleep(killAfter)
		phase = model.phase(task, ws)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		rec := exec.Command(binary, "sessions", "recover", "--db", db)
		rec.Env = env
		out, _ := rec.CombinedOutput()
		st, err := sqlite.Open(db)
		if err != nil {
			return phase, err
		}
		list, err := st.List(context.Background(), store.Filter{})
		st.Close()
		if err == nil && len(list) == 0 && phase == "start-up" {
			r.unrecorded++ // killed before session.started was committed: nothing to resume
			return phase, nil
		}
		if err != nil || len(list) != 1 {
			return phase, fmt.Errorf("sessions after the kill: %v %v\n%s", list, err, out)
		}
		id = list[0].ID
	} else {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--workspaces", dir, "--lease-ttl", "1s", "--grace", "5s"}, common...)
		s, err := startServer(args, env)
		if err != nil {
			return "", err
		}
		body, _ := json.Marshal(map[string]any{"task": task, "workspace": "ws", "verify": []string{verifyCmd}})
		resp, err := http.Post(s.url+"/v1/sessions", "application/json", bytes.NewReader(body))
		if err != nil {
			s.kill()
			return "", err
		}
		var created struct{ ID string }
		_ = json.NewDecoder(resp.Body).Decode(&created)
		resp.Body.Close()
		id = created.ID
		time.Sleep(killAfter)
		phase = model.phase(task, ws)
		s.kill()
		s2, err := startServer(args, env)
		if err != nil {
			return phase, err
		}
		err = waitEnded(s2.url, id)
		s2.stop()
		if err != nil {
			return phase, err
		}
	}
	return phase, verify(target, db, id, task, ws, r)
}

// verify checks one recovered session.
func verify(target, db, id, task, ws string, r *tally) error {
	var st store.Store
	var err error
	if strings.HasPrefix(db, "postgres://") {
		st, err = postgres.Open(context.Background(), db)
	} else {
		st, err = sqlite.Open(db)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	events, err := st.Load(context.Background(), id)
	if err != nil {
		return err
	}
	var problems []string
	ended, status := 0, loop.Status("")
	replies := map[int]int{}
	finished := map[string]int{}
	recorded := map[int]int{} // step k → request number whose reply is in the log
	for n, e := range events {
		if e.Seq != int64(n+1) {
			problems = append(problems, fmt.Sprintf("event %d has seq %d", n+1, e.Seq))
			r.torn++
			break
		}
		switch d := e.Data.(type) {
		case *loop.SessionEnded:
			ended++
			status = d.Status
		case *loop.ModelResponded:
			replies[d.Iteration]++
			if m := replyID.FindStringSubmatch(d.Text); m != nil {
				k, _ := strconv.Atoi(m[1])
				req, _ := strconv.Atoi(m[2])
				recorded[k] = req
			}
		case *loop.ToolFinished:
			finished[d.CallID]++
		}
	}
	if ended > 1 {
		r.torn++
		problems = append(problems, fmt.Sprintf("%d session.ended", ended))
	}
	for it, n := range replies {
		if n > 1 {
			r.torn++
			problems = append(problems, fmt.Sprintf("iteration %d has %d model replies", it, n))
		}
	}
	for c, n := range finished {
		if n > 1 {
			r.torn++
			problems = append(problems, fmt.Sprintf("tool call %s finished %d times", c, n))
		}
	}
	b, _ := os.ReadFile(filepath.Join(ws, "effects.txt"))
	lines := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		lines[l]++
		if lines[l] == 2 {
			r.rerun++
			problems = append(problems, "step "+l+" ran twice")
		}
	}
	for _, q := range model.requests(task) {
		if rec, ok := recorded[q.step]; ok && q.n > rec {
			r.repeated++
			problems = append(problems, fmt.Sprintf("step %d asked again (request %d) after reply %d was recorded", q.step, q.n, rec))
		}
	}
	if status == loop.StatusCompleted {
		r.completed++
	} else {
		problems = append(problems, fmt.Sprintf("ended %q", status))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

var replyID = regexp.MustCompile(`step (\d+) \(r(\d+)\)`)

// modelServer speaks OpenAI's streaming chat completions: step k (k
// assistant messages so far, plus one) streams "step k (rN)" in slow
// chunks, then a call to execute_command appending k to effects.txt;
// after the last step it answers "done".
type modelServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	n    int
	reqs map[string][]request // by task
	busy map[string]bool      // task → a stream is being written
}

type request struct{ step, n int }

func newModelServer() *modelServer {
	m := &modelServer{reqs: map[string][]request{}, busy: map[string]bool{}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
}

func (m *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	task, k := "", 1
	for _, msg := range body.Messages {
		if s, ok := msg.Content.(string); ok && msg.Role == "user" && strings.HasPrefix(s, "kill run ") && task == "" {
			task = s
		}
		if msg.Role == "assistant" {
			k++
		}
	}
	m.mu.Lock()
	m.n++
	n := m.n
	m.reqs[task] = append(m.reqs[task], request{k, n})
	m.busy[task] = true
	m.mu.Unlock()
	defer func() { m.mu.Lock(); m.busy[task] = false; m.mu.Unlock() }()

	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	text := fmt.Sprintf("step %d (r%d)", k, n)
	if k > steps {
		text = fmt.Sprintf("done, step %d (r%d)", k, n)
	}
	for _, part := range []string{text[:4], text[4:9], text[9:]} {
		send(map[string]any{"role": "assistant", "content": part}, nil)
		time.Sleep(20 * time.Millisecond)
	}
	if k > steps {
		send(map[string]any{}, "stop")
	} else {
		cmd := fmt.Sprintf("echo %d >> effects.txt; sleep 0.05", k)
		if k == 3 {
			cmd = fmt.Sprintf("echo %d >> effects.txt; sleep 0.5", k) // the long command
		}
		args, _ := json.Marshal(map[string]string{"command": cmd})
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", k), "type": "function",
			"function": map[string]any{"name": "execute_command", "arguments": string(args)}}}}, nil)
		send(map[string]any{}, "tool_calls")
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

func (m *modelServer) requests(task string) []request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]request(nil), m.reqs[task]...)
}

// phase guesses what the session was doing at the kill, from the model
// server and the workspace.
func (m *modelServer) phase(task, ws string) string {
	m.mu.Lock()
	streaming := m.busy[task]
	asked := len(m.reqs[task])
	m.mu.Unlock()
	b, _ := os.ReadFile(filepath.Join(ws, "effects.txt"))
	ran := len(strings.Fields(string(b)))
	switch {
	case asked == 0:
		return "start-up"
	case streaming:
		return "model stream"
	case asked > steps:
		if asked == steps+1 {
			return "verification"
		}
		return "after the end"
	case ran == asked && ran == 3:
		return "long command"
	case ran == asked:
		return "tool call"
	}
	return "between steps"
}

type server struct {
	cmd *exec.Cmd
	url string
}

func startServer(args, env []string) (*server, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	var errb syncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	listening := regexp.MustCompile(`listening on (http://[0-9.:]+)`)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := listening.FindStringSubmatch(errb.String()); m != nil {
			return &server{cmd: cmd, url: m[1]}, nil
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, fmt.Errorf("serve did not start:\n%s", errb.String())
}

func (s *server) kill() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() }
func (s *server) stop() { _ = s.cmd.Process.Signal(syscall.SIGTERM); _ = s.cmd.Wait() }

func waitEnded(url, id string) error {
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url + "/v1/sessions/" + id)
		if err != nil {
			continue
		}
		var s struct{ Status string }
		_ = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		last = s.Status
		if s.Status != "running" && s.Status != "" {
			return nil
		}
	}
	return fmt.Errorf("session %s still %q after a minute", id, last)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "killbench:", err)
		os.Exit(1)
	}
}
