package loop_test

import (
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/session"
	"github.com/agentloop/agentloop/tool/workspace"
)

// A final reply that admits the task cannot be done is not a completed
// answer: the session waits for a person, who can send guidance.
func TestAdmissionWaitsForAPerson(t *testing.T) {
	e := newEnv()
	rec := &recorder{}
	m := scripted.Replies(
		scripted.Call("read_file", `{"path":"a.go"}`),
		scripted.Text("I am unable to fix this: the package it imports does not exist."),
		scripted.Text("Done: I vendored the package and the build passes.").WithExpect(scripted.Expect{LastMessageContains: "vendor it"}),
	)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", rec)}, nil)
	st := run(t, r, "fix the build")
	if st.Status != loop.StatusWaiting || st.Reason != loop.ReasonModelGaveUp || !strings.Contains(st.Question, "package it imports does not exist") {
		t.Fatalf("%s (%s) %q", st.Status, st.Reason, st.Question)
	}
	s, err := r.Reply(t.Context(), st.ID, "vendor it from ../lib")
	if err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	evs, _ := e.log.Load(t.Context(), st.ID)
	st, err = loop.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	checkScript(t, m)
	if st.Status != loop.StatusCompleted || !strings.HasPrefix(st.Answer, "Done:") {
		t.Fatalf("after the reply: %s (%s) %q", st.Status, st.Reason, st.Answer)
	}
}

// "I cannot find any bug, the code is fine" is an answer, not a failure.
func TestCleanNegativeFindingCompletes(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("I cannot find any bug, the code is fine."))
	st := run(t, e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, nil), "find the bug")
	if st.Status != loop.StatusCompleted {
		t.Fatalf("%s (%s)", st.Status, st.Reason)
	}
}

// final_answer with success false waits for a person too.
func TestFinalAnswerUnsuccessfulWaits(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Call("final_answer", `{"answer":"The spec contradicts itself; I stopped.","success":false}`))
	st := run(t, e.runner(t, m, session.Tools(), nil), "implement the spec")
	checkScript(t, m)
	if st.Status != loop.StatusWaiting || st.Reason != loop.ReasonModelGaveUp || !strings.Contains(st.Question, "contradicts itself") {
		t.Fatalf("%s (%s) %q", st.Status, st.Reason, st.Question)
	}
}

// update_plan fail, then the model's summary: the session fails with
// plan_failed and keeps the summary as a partial answer.
func TestPlanFailEndsFailed(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Call("update_plan", `{"action":"create","goal":"Ship","steps":["build","test"]}`),
		scripted.Call("update_plan", `{"action":"fail","reason":"the build needs a license server"}`),
		scripted.Text("I built nothing: the build needs a license server."),
	)
	st := run(t, e.runner(t, m, session.Tools(), nil), "ship it")
	checkScript(t, m)
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonPlanFailed || !strings.Contains(st.Detail, "license server") || st.Answer == "" {
		t.Fatalf("%s (%s) %q %q", st.Status, st.Reason, st.Detail, st.Answer)
	}
}

// A reply cut off by the token limit is continued; the pieces make the answer.
func TestTruncatedReplyIsContinued(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(
		scripted.Text("The three causes are: one, ").WithFinishReason(model.FinishLength),
		scripted.Text("two and three.").WithExpect(scripted.Expect{LastMessageContains: "cut off by the token limit"}),
	)
	st := run(t, e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, nil), "list the causes")
	checkScript(t, m)
	if st.Status != loop.StatusCompleted || st.Answer != "The three causes are: one, two and three." {
		t.Fatalf("%s (%s) %q", st.Status, st.Reason, st.Answer)
	}
}

// Replies that keep hitting the limit fail the session (truncated), and a
// cut-off tool call never runs.
func TestTruncatedRepliesFail(t *testing.T) {
	e := newEnv()
	rec := &recorder{}
	cut := scripted.Call("write_file", `{"path":"a.go","content":"package a"}`).WithFinishReason(model.FinishLength)
	m := scripted.Replies(cut, cut, cut)
	st := run(t, e.runner(t, m, []tool.Tool{echoTool("write_file", rec)}, nil), "write a.go")
	checkScript(t, m)
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonTruncated {
		t.Fatalf("%s (%s)", st.Status, st.Reason)
	}
	if ran := rec.list(); len(ran) != 0 {
		t.Fatalf("cut-off calls ran: %v", ran)
	}
}

// An empty reply is asked about once; a second one fails the session.
func TestEmptyRepliesFail(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text(""), scripted.Text("  \n").WithExpect(scripted.Expect{LastMessageContains: "reply was empty"}))
	st := run(t, e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, nil), "x")
	checkScript(t, m)
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonEmptyReply {
		t.Fatalf("%s (%s)", st.Status, st.Reason)
	}
	// One empty reply, then an answer: completed.
	e = newEnv()
	m = scripted.Replies(scripted.Text(""), scripted.Text("42"))
	st = run(t, e.runner(t, m, []tool.Tool{echoTool("read_file", &recorder{})}, nil), "x")
	if st.Status != loop.StatusCompleted || st.Answer != "42" {
		t.Fatalf("%s (%s) %q", st.Status, st.Reason, st.Answer)
	}
}

// A tool refused access by the workspace (or the OS) stops the session for
// a person at once; the rest of the reply does not run; resuming goes on.
func TestPermissionDeniedWaitsForAPerson(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv()
	rec := &recorder{}
	m := scripted.Replies(
		scripted.Calls(scripted.Call("read_file", `{"path":"/etc/hostname"}`), scripted.Call("echo", `{"path":"x"}`)),
		scripted.Text("I will stay inside the workspace.").WithExpect(scripted.Expect{LastMessageContains: "not run"}),
	)
	r := e.runner(t, m, append(fs.Tools(ws), echoTool("echo", rec)), nil)
	st := run(t, r, "read the host name")
	if st.Status != loop.StatusWaiting || st.Reason != loop.ReasonPermissionDenied ||
		!strings.Contains(st.Question, "read_file") || !strings.Contains(st.Question, "outside the workspace") {
		t.Fatalf("%s (%s) %q", st.Status, st.Reason, st.Question)
	}
	if len(rec.list()) != 0 {
		t.Fatalf("the rest of the reply ran: %v", rec.list())
	}
	s, err := r.Resume(t.Context(), st.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if st, err = s.Wait(t.Context()); err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("after resume: %v %s", err, st.Status)
	}
	checkScript(t, m)
}
