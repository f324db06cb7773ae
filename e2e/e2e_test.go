// Package e2e runs whole sessions end to end: the real runner, real tools
// in real temporary workspaces, the SQLite store, and the scripted model.
package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/plan"
	"github.com/agentloop/agentloop/tool/session"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
	"github.com/agentloop/agentloop/verify"
)

type world struct {
	dir   string
	ws    *workspace.Workspace
	store *sqlite.Store
}

func newWorld(t *testing.T, files map[string]string) *world {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "e2e.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &world{dir: dir, ws: ws, store: st}
}

func (w *world) runner(t *testing.T, m *scripted.Model, mut func(*loop.Config)) *loop.Runner {
	t.Helper()
	tools := append(fs.Tools(w.ws), shell.New(w.ws, shell.Config{}))
	tools = append(tools, session.Tools()...)
	cfg := loop.Config{Model: m, Tools: tool.MustRegistry(tools...), Log: w.store, Context: plan.Context,
		Limits: loop.Limits{MaxIterations: 20, NoProgressAfter: 0}}
	if mut != nil {
		mut(&cfg)
	}
	r, err := loop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (w *world) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Scenario 2: a refactor across two files, with a plan created and every
// step completed, checked by the Go compiler.
func TestRefactorAcrossTwoFilesWithPlan(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	w := newWorld(t, map[string]string{
		"go.mod":     "module example.com/shop\n\ngo 1.22\n",
		"price.go":   "package shop\n\n// Total is the price of n items.\nfunc Total(n int) int { return n * 3 }\n",
		"invoice.go": "package shop\n\nimport \"fmt\"\n\n// Line prints an invoice line.\nfunc Line(n int) string { return fmt.Sprintf(\"%d items: %d\", n, Total(n)) }\n",
	})
	m := scripted.Replies(
		scripted.Call("update_plan", `{"action":"create","goal":"Rename Total to PriceOf","steps":["Rename the function in price.go","Update the caller in invoice.go","Build"]}`),
		scripted.Calls(
			scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"in_progress"}`),
			scripted.Call("edit_file", `{"path":"price.go","old_text":"// Total is the price of n items.\nfunc Total(","new_text":"// PriceOf is the price of n items.\nfunc PriceOf("}`),
		),
		scripted.Calls(
			scripted.Call("update_plan", `{"action":"update_step","step":1,"status":"completed"}`),
			scripted.Call("update_plan", `{"action":"update_step","step":2,"status":"in_progress"}`),
			scripted.Call("edit_file", `{"path":"invoice.go","old_text":"Total(n)","new_text":"PriceOf(n)"}`),
		),
		scripted.Calls(
			scripted.Call("update_plan", `{"action":"update_step","step":2,"status":"completed"}`),
			scripted.Call("execute_command", `{"command":"go build ./... && go vet ./..."}`),
		).WithExpect(scripted.Expect{LastMessageContains: "edited invoice.go"}),
		scripted.Calls(
			scripted.Call("update_plan", `{"action":"update_step","step":3,"status":"completed","result":"builds"}`),
			scripted.Call("update_plan", `{"action":"complete"}`),
		).WithExpect(scripted.Expect{LastMessageContains: "exit code: 0"}),
		scripted.Text("Renamed Total to PriceOf in price.go and invoice.go; the package builds."),
	)
	r := w.runner(t, m, func(c *loop.Config) { c.Verifier = verify.New(w.ws, []string{"go build ./..."}, shell.Config{}) })
	st, err := r.Run(t.Context(), loop.Task{Prompt: "Rename Total to PriceOf"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusCompleted || st.Verification == nil || st.Verification.Outcome != loop.VerifyPass {
		t.Fatalf("%s %s %+v", st.Status, st.Detail, st.Verification)
	}
	if st.Plan == nil || st.Plan.Status != "completed" {
		t.Fatalf("plan %+v", st.Plan)
	}
	for i, s := range st.Plan.Steps {
		if s.Status != "completed" {
			t.Fatalf("step %d is %s", i+1, s.Status)
		}
	}
	if !strings.Contains(w.read(t, "price.go"), "func PriceOf(") || !strings.Contains(w.read(t, "invoice.go"), "PriceOf(n)") {
		t.Fatal("files not refactored")
	}
	diff, err := w.ws.Diff()
	if err != nil || !strings.Contains(diff, "-func Total(n int) int") || !strings.Contains(diff, "+func PriceOf(n int) int") {
		t.Fatalf("diff: %v\n%s", err, diff)
	}
}

// Scenario 3: writing a file where a directory stands fails again and
// again; stuck detection nudges the model once, then pauses the session for
// a person. (A file the OS refuses to write stops the session at once for a
// person instead: see TestPermissionDeniedWaitsForAPerson in loop.)
func TestReadOnlyFileMakesTheSessionStuck(t *testing.T) {
	w := newWorld(t, map[string]string{"notes/keep": "x"})
	target := "notes"
	call := `{"path":"` + target + `","content":"new"}`
	var steps []scripted.Step
	for range 4 {
		steps = append(steps, scripted.Call("write_file", call))
	}
	m := scripted.Replies(steps...)
	r := w.runner(t, m, nil)
	st, err := r.Run(t.Context(), loop.Task{Prompt: "update " + target})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusWaiting || st.Reason != loop.ReasonStuck || st.StuckDetections != 2 {
		t.Fatalf("%s %s detections %d", st.Status, st.Reason, st.StuckDetections)
	}
	nudged := false
	for _, msg := range m.Requests()[3].Messages {
		nudged = nudged || strings.Contains(msg.Content, "repeating")
	}
	if !nudged {
		t.Fatal("no nudge before the 4th call")
	}
	// The log survives: a new runner sees the same paused session.
	evs, err := w.store.Load(t.Context(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	back, err := loop.Fold(evs)
	if err != nil || back.Status != loop.StatusWaiting {
		t.Fatalf("%v %s", err, back.Status)
	}
}

// Scenario 4: a command that sleeps past its timeout is killed and
// reported, and the loop goes on.
func TestCommandTimeoutIsReportedAndTheLoopGoesOn(t *testing.T) {
	w := newWorld(t, nil)
	m := scripted.Replies(
		scripted.Call("execute_command", `{"command":"sleep 30","timeout_seconds":1}`),
		scripted.Call("execute_command", `{"command":"echo still here"}`).WithExpect(scripted.Expect{LastMessageContains: "timed out after 1s"}),
		scripted.Text("The sleep timed out; the next command ran."),
	)
	r := w.runner(t, m, nil)
	st, err := r.Run(t.Context(), loop.Task{Prompt: "run things"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	calls := st.Iterations[0].ToolCalls
	if st.Status != loop.StatusCompleted || calls[0].Status != loop.ToolError || !strings.Contains(st.Iterations[1].ToolCalls[0].Output, "still here") {
		t.Fatalf("%s %+v", st.Status, calls)
	}
	if !strings.Contains(calls[0].Output, "timed out after 1s") || !strings.Contains(calls[0].Output, "stopped") {
		t.Fatalf("timeout report: %q", calls[0].Output)
	}
}
