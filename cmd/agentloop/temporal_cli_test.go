package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/temporal"
	"github.com/agentloop/agentloop/temporal/temporaltest"
)

// toolResults counts the tool results in an OpenAI chat request and finds
// the session's task, to know where each session is.
var taskRE = regexp.MustCompile(`session-(\d+)`)

// Sessions on a real Temporal dev server, run by the real `agentloop
// worker`: the worker is SIGKILLed while every session's tool is running
// in a local activity, another worker starts, and each session finishes
// with no model call made twice and no tool run twice; the recorded
// histories replay.
func TestTemporalWorkersSurviveSIGKILL(t *testing.T) {
	hostPort := temporaltest.Start(t)
	const sessions, steps = 3, 4

	// A loopback OpenAI-compatible model: k tool results so far → the
	// next command, or the answer; every request counted by (session, k).
	var mu sync.Mutex
	asked := map[string]int{}
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		json.Unmarshal(b, &req)
		session, k := "", 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				k++
			}
			if s := taskRE.FindString(m.Content); s != "" && session == "" {
				session = s
			}
		}
		mu.Lock()
		asked[fmt.Sprintf("%s/%d", session, k)]++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if k < steps {
			args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("sleep 0.6; echo %d >> runs.txt", k)})
			call, _ := json.Marshal(map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", k), "type": "function",
				"function": map[string]string{"name": "execute_command", "arguments": string(args)}})
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[%s]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n", call)
			return
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"all commands ran\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(provider.Close)

	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=k")
	t.Setenv("OPENAI_API_KEY", "k") // this process records the sessions
	startWorker := func() *background {
		w := c.start("worker", "--temporal", hostPort, "--db", c.db, "--heartbeat", "300ms", "--task-queue", "e2e")
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(w.err.String(), "agentloop worker: running"); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the worker did not start:\n%s", w.err.String())
			}
		}
		return w
	}
	w1 := startWorker()

	// This process records the sessions and starts their workflows.
	st, err := assemble.OpenStore(c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runner, err := loop.New((&assemble.Resolver{}).RunnerConfig(st, price.Default()))
	if err != nil {
		t.Fatal(err)
	}
	tc, err := client.Dial(client.Options{HostPort: hostPort})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	// Every step a local activity (no signals to let in): the kill lands
	// in one, and the next worker takes the steps the server had not
	// recorded again, from the log.
	engine := &temporal.Engine{Client: tc, Runner: runner, TaskQueue: "e2e",
		Input: temporal.Input{Heartbeat: 2 * time.Second, StepsPerRun: 6, ControlDelay: time.Hour}}
	ws := t.TempDir()
	var ids []string
	for i := range sessions {
		dir := filepath.Join(ws, fmt.Sprint(i))
		os.MkdirAll(dir, 0o755)
		id, err := engine.Start(t.Context(), loop.Task{Prompt: fmt.Sprintf("session-%d: run the commands", i), Model: "openai/gpt-test",
			Endpoint: provider.URL + "/v1", Workspace: dir, Approval: "auto", Limits: &loop.Limits{MaxIterations: 20}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}

	// SIGKILL the worker while every session has a tool running.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		running := 0
		for _, id := range ids {
			evs, _ := st.Load(t.Context(), id)
			if n := len(evs); n > 0 && evs[n-1].Type == loop.TypeToolStarted && evs[n-1].Data.(*loop.ToolStarted).CallID != "call_0" {
				running++
			}
		}
		if running == sessions {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sessions never all had a tool running at once\nworker: %s", w1.err.String())
		}
	}
	w1.cmd.Process.Signal(syscall.SIGKILL)
	w1.wait(t)
	w2 := startWorker()

	for _, id := range ids {
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		sum, err := engine.Wait(ctx, id)
		cancel()
		if err != nil || sum.Status != loop.StatusCompleted {
			t.Fatalf("session %s: %+v %v\nworker 2: %s", id, sum, err, w2.err.String())
		}
	}
	mu.Lock()
	for k, n := range asked {
		if n != 1 {
			t.Errorf("model call %s made %d times", k, n)
		}
	}
	if len(asked) != sessions*(steps+1) {
		t.Errorf("%d distinct model calls, want %d: %v", len(asked), sessions*(steps+1), asked)
	}
	mu.Unlock()
	for i, id := range ids {
		evs, err := st.Load(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		ended, unknown := 0, 0
		for k, e := range evs {
			if f, ok := e.Data.(*loop.ToolFinished); ok && f.Unknown {
				unknown++ // the command the kill interrupted: not run again
			}
			if e.Seq != int64(k+1) {
				t.Fatalf("session %s: a gap or repeat at %d", id, k+1)
			}
			if e.Type == loop.TypeSessionEnded {
				ended++
			}
		}
		if ended != 1 {
			t.Fatalf("session %s ended %d times", id, ended)
		}
		if unknown != 1 {
			t.Fatalf("session %s: %d tool calls told unknown, want the one the kill interrupted", id, unknown)
		}
		runs, _ := os.ReadFile(filepath.Join(ws, fmt.Sprint(i), "runs.txt"))
		seen := map[string]int{}
		for _, l := range strings.Fields(string(runs)) {
			if seen[l]++; seen[l] > 1 {
				t.Fatalf("session %s: command %s ran twice: %q", id, l, runs)
			}
		}
	}

	// The recorded histories replay against today's workflow code.
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
	for _, id := range ids {
		iter := tc.GetWorkflowHistory(t.Context(), temporal.WorkflowID(id), "", false, 0)
		var events int
		hist, err := temporal.ReadHistory(iter)
		if err != nil {
			t.Fatal(err)
		}
		events = len(hist.Events)
		if err := replayer.ReplayWorkflowHistory(nil, hist); err != nil {
			t.Fatalf("replaying session %s's history (%d events): %v", id, events, err)
		}
		if os.Getenv("AGENTLOOP_SAVE_HISTORY") != "" {
			temporal.WriteHistory(filepath.Join("..", "..", "temporal", "testdata", "history.json"), hist)
		}
	}
}

// The HTTP API unchanged on Temporal: `agentloop serve --engine temporal`
// records sessions and hands them to workflows that `agentloop worker`
// runs; their events stream live through the server (PostgreSQL tells it
// of the workers' commits), and pause, resume and terminate reach them.
func TestServeOnTemporal(t *testing.T) {
	hostPort := temporaltest.Start(t)
	c := newCLI(t)
	c.db = pgtest.URL(t)
	ws := t.TempDir()
	w := c.start("worker", "--temporal", hostPort, "--db", c.db, "--task-queue", "api")
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(w.err.String(), "agentloop worker: running"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not start:\n%s", w.err.String())
		}
	}
	s := c.serve("--allow-script-models", "--engine", "temporal", "--temporal", hostPort, "--task-queue", "api", "--workspaces", ws, "--yes")

	var steps []string
	for i := range 8 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}],"delay":"150ms"}`, i, i))
	}
	model := writeScript(t, `{"steps":[`+strings.Join(append(steps, `{"text":"wrote eight files"}`), ",")+`]}`)
	create := func(name string) string {
		var created struct{ ID string }
		if code := apiCall(t, "POST", s.url+"/v1/sessions", fmt.Sprintf(`{"task":"write eight files","model":"script:%s","workspace":%q,"max_iterations":20}`, model, name), &created); code != 201 {
			t.Fatalf("create: %d\n%s", code, s.errText())
		}
		return created.ID
	}
	a, b := create("a"), create("b")

	// Live through the server while a worker runs it.
	ids, _ := sseIDs(t, s.url, a, "", 10)
	if len(ids) < 5 {
		t.Fatalf("streamed %v", ids)
	}
	var out struct{ Outcome string }
	if code := apiCall(t, "POST", s.url+"/v1/sessions/"+a+"/pause", `{"reason":"look"}`, &out); code >= 300 {
		t.Fatalf("pause: %d", code)
	}
	for deadline := time.Now().Add(30 * time.Second); statusOf(t, s.url, a) != "paused"; time.Sleep(50 * time.Millisecond) {
		if st := statusOf(t, s.url, a); time.Now().After(deadline) || st == "completed" {
			t.Fatalf("after pause: %s\nworker: %s", st, w.err.String())
		}
	}
	if code := apiCall(t, "POST", s.url+"/v1/sessions/"+b+"/terminate", `{"reason":"different_approach"}`, &out); code >= 300 {
		t.Fatalf("terminate: %d", code)
	}
	if code := apiCall(t, "POST", s.url+"/v1/sessions/"+a+"/resume", `{}`, &out); code >= 300 {
		t.Fatalf("resume: %d", code)
	}
	for _, want := range []struct{ id, status string }{{a, "completed"}, {b, "terminated"}} {
		for deadline := time.Now().Add(60 * time.Second); statusOf(t, s.url, want.id) != want.status; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("session %s is %s, want %s\nworker: %s", want.id, statusOf(t, s.url, want.id), want.status, w.err.String())
			}
		}
	}
	for i := range 8 {
		if got, err := os.ReadFile(filepath.Join(ws, "a", fmt.Sprintf("f%d.txt", i))); err != nil || string(got) != fmt.Sprint(i) {
			t.Fatalf("a/f%d.txt: %q %v", i, got, err)
		}
	}
	evs := allEvents(t, s.url, a)
	for k, e := range evs {
		if e.Seq != int64(k+1) {
			t.Fatalf("a gap or repeat at %d", k+1)
		}
	}
}
