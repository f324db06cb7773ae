package verify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
	"github.com/agentloop/agentloop/verify"
)

func setup(t *testing.T, m *scripted.Model, max int, cmds ...string) (*loop.Runner, string) {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(fs.Tools(ws)...), Log: memory.New(),
		Verifier: verify.New(ws, cmds, shell.Config{}), Limits: loop.Limits{MaxIterations: max}})
	if err != nil {
		t.Fatal(err)
	}
	return r, dir
}

// The model claims completion too early; verification fails and goes back
// to it; it fixes the file; verification passes.
func TestFailureIsFedBackThenPasses(t *testing.T) {
	m := scripted.Replies(
		scripted.Text("done already"),
		scripted.Call("write_file", `{"path":"ok.txt","content":"yes"}`).WithExpect(scripted.Expect{LastMessageContains: "verification failed"}),
		scripted.Text("now it is done"),
	)
	r, _ := setup(t, m, 5, "test -f ok.txt", "true")
	st, err := r.Run(t.Context(), loop.Task{Prompt: "create ok.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusCompleted || st.Answer != "now it is done" || st.Verification.Outcome != loop.VerifyPass {
		t.Fatalf("%s %q %+v", st.Status, st.Answer, st.Verification)
	}
	feedback := m.Requests()[1].Messages
	last := feedback[len(feedback)-1].Content
	if !strings.Contains(last, "✗ test -f ok.txt failed") || !strings.Contains(last, "✓ true passed") {
		t.Fatalf("feedback: %q", last)
	}
}

// Feedback is bounded by the iteration limit: the last claim that fails
// verification ends the session as failed.
func TestFailureWithNoIterationsLeft(t *testing.T) {
	m := scripted.Replies(scripted.Text("done"), scripted.Text("really done"))
	r, _ := setup(t, m, 2, "false")
	st, err := r.Run(t.Context(), loop.Task{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonVerificationFailed || st.Verification.Outcome != loop.VerifyFail {
		t.Fatalf("%s %s %+v", st.Status, st.Reason, st.Verification)
	}
}

// A limit ends the session; verification still runs and reports a partial pass.
func TestLimitRunsVerification(t *testing.T) {
	m := scripted.Replies(scripted.Call("write_file", `{"path":"a.txt","content":"a"}`), scripted.Text("best effort"))
	r, dir := setup(t, m, 1, "test -f a.txt", "test -f b.txt")
	st, err := r.Run(t.Context(), loop.Task{Prompt: "write a and b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	v := st.Verification
	if st.Reason != loop.ReasonMaxIterations || v == nil || v.Outcome != loop.VerifyPartialPass || v.Trigger != "limit" || !v.Checks[0].Passed || v.Checks[1].Passed {
		t.Fatalf("%s %+v", st.Reason, v)
	}
}
