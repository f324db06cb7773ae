package protocol_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/protocol"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/workspace"
)

func TestExampleProtocolLoads(t *testing.T) {
	p, err := protocol.Load("../examples/protocols/project-map.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 3 || p.Steps[0].RequiredOutput != protocol.OutputFile || p.Steps[1].RequiredOutput != protocol.OutputConfirmation {
		t.Fatalf("%+v", p)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`{"id":"x","title":"t","steps":[]}`, "no steps"},
		{`{"id":"X Y","title":"t","steps":[{"id":"a","title":"a","instruction":"i"}]}`, `id "X Y"`},
		{`{"id":"x","title":"t","steps":[{"id":"a","title":"a","instruction":"i","required_output":"email"}]}`, `step 1 (a): required_output "email"`},
		{`{"id":"x","title":"t","steps":[{"id":"a","title":"a","instruction":"i"},{"id":"a","title":"b","instruction":"j"}]}`, "step 2 (a): duplicate id"},
		{`{"id":"x","title":"t","steps":[{"id":"a","title":"a","instruction":""}]}`, "instruction is empty"},
		{`{"id":"x","title":"t","steps":[{"id":"a","title":"a","instruction":"i","file":"f"}]}`, "file is only used"},
		{`{"id":"x","title":"t","stepz":[]}`, "unknown field"},
	}
	for _, tt := range tests {
		if _, err := protocol.Parse([]byte(tt.src)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.src, err, tt.want)
		}
	}
}

// The example protocol end to end: step 1 is refused until ARCHITECTURE.md
// exists, step 2 waits for a person (feedback first, then "yes"), step 3
// ends the session. Every step's output and tool calls are recorded.
func TestWalkThroughProtocol(t *testing.T) {
	p, err := protocol.Load("../examples/protocols/project-map.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# demo\n"), 0o644)
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.Replies(
		scripted.Call("read_file", `{"path":"README.md"}`).WithExpect(scripted.Expect{LastMessageContains: "step 1 of 3"}),
		scripted.Text("Mapped it."), // too early: no file yet
		scripted.Call("write_file", `{"path":"ARCHITECTURE.md","content":"# Architecture\n"}`).WithExpect(scripted.Expect{LastMessageContains: "does not exist yet"}),
		scripted.Text("Wrote ARCHITECTURE.md."),
		scripted.Text("Risks: no tests.").WithExpect(scripted.Expect{LastMessageContains: "step 2 of 3"}),
		scripted.Text("Risks: no tests, no CI, no owner.").WithExpect(scripted.Expect{LastMessageContains: "add CI"}),
		scripted.Text("1. Add a test.").WithExpect(scripted.Expect{LastMessageContains: "step 3 of 3"}),
	)
	log := memory.New()
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(fs.Tools(ws)...), Log: log, Gate: &protocol.Gate{P: p, Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Run(t.Context(), loop.Task{Prompt: "Run the project-map protocol"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusWaiting || st.Reason != loop.ReasonConfirmation || len(st.Steps) != 1 {
		t.Fatalf("%s %s %d steps", st.Status, st.Reason, len(st.Steps))
	}
	s1 := st.Steps[0]
	if s1.StepID != "map-structure" || s1.Output != "Wrote ARCHITECTURE.md." || !slices.Equal(s1.ToolCalls, []string{"read_file", "write_file"}) {
		t.Fatalf("step 1: %+v", s1)
	}
	s, err := r.Reply(t.Context(), st.ID, "add CI to the list")
	if err != nil {
		t.Fatal(err)
	}
	st, _ = s.Wait(t.Context())
	if st.Status != loop.StatusWaiting || len(st.Steps) != 1 {
		t.Fatalf("after feedback: %s %d", st.Status, len(st.Steps))
	}
	s, err = r.Reply(t.Context(), st.ID, "yes")
	if err != nil {
		t.Fatal(err)
	}
	st, _ = s.Wait(t.Context())
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	if st.Status != loop.StatusCompleted || st.Answer != "1. Add a test." || len(st.Steps) != 3 || !st.Steps[1].Confirmed || st.Plan.Status != "completed" {
		t.Fatalf("%s %q steps %+v plan %+v", st.Status, st.Answer, st.Steps, st.Plan)
	}
	// The log alone rebuilds the same protocol state.
	evs, _ := log.Load(t.Context(), st.ID)
	back, err := loop.Fold(evs)
	if err != nil || len(back.Steps) != 3 || back.Steps[1].Output != "Risks: no tests, no CI, no owner." {
		t.Fatalf("%v %+v", err, back.Steps)
	}
}
