package service_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/memory"
)

// Compare pairs a session's steps with its fork's, gives both outcomes
// and the diff of their final files — from the directories while they
// exist, from the last checkpoints once one is gone.
func TestCompareASessionWithItsFork(t *testing.T) {
	ctx := t.Context()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cs := &checkpoint.Store{Root: t.TempDir()}
	orig := scripted.Replies(put("a.txt", "one\n"), put("b.txt", "b\n"), put("a.txt", "two\n"), scripted.Text("orig done"))
	fork := scripted.Replies(put("c.txt", "c\n"), scripted.Text("fork done"))
	svc := forkService(t, memory.New(), cs, "owner-1", orig, fork)
	admin := service.Local("test")
	started, err := svc.Start(ctx, admin, loop.Task{Prompt: "edit", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, started.Session)
	f, err := svc.Fork(ctx, admin, started.ID, service.ForkRequest{At: 2})
	if err != nil {
		t.Fatal(err)
	}
	fst := waitDone(t, f.Session)

	cmp, err := svc.Compare(ctx, admin, started.ID, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.A.ID != started.ID || cmp.A.Answer != "orig done" || cmp.A.Steps != 4 || cmp.A.ToolCalls != 3 || cmp.A.ForkedFrom != nil || cmp.A.Workspace != "directory" {
		t.Fatalf("side a: %+v", cmp.A)
	}
	if cmp.B.ID != f.ID || cmp.B.Answer != "fork done" || cmp.B.Steps != 4 || cmp.B.ToolCalls != 3 ||
		*cmp.B.ForkedFrom != (api.ForkedFrom{ID: started.ID, Iteration: 2}) || !strings.HasSuffix(cmp.B.Duration, "s") {
		t.Fatalf("side b: %+v", cmp.B)
	}
	if len(cmp.Steps) != 4 {
		t.Fatalf("%d steps paired", len(cmp.Steps))
	}
	for i, st := range cmp.Steps {
		if st.Number != i+1 || st.A == nil || st.B == nil {
			t.Fatalf("step %d: %+v", i+1, st)
		}
	}
	if s3 := cmp.Steps[2]; s3.A.ToolCalls[0] != (api.StepToolCall{ToolName: "put", Status: "success"}) || len(s3.B.ToolCalls) != 1 || s3.A.Status != "completed" {
		t.Fatalf("step 3: %+v %+v", s3.A, s3.B)
	}
	wantFiles := []api.FileChange{{Path: "a.txt", Change: "modified"}, {Path: "c.txt", Change: "added"}}
	if !reflect.DeepEqual(cmp.Files, wantFiles) {
		t.Fatalf("files %+v, want %+v", cmp.Files, wantFiles)
	}
	for _, line := range []string{"--- a/a.txt", "-two", "+one", "+++ b/c.txt", "+c"} {
		if !strings.Contains(cmp.Diff, line+"\n") {
			t.Fatalf("diff lacks %q:\n%s", line, cmp.Diff)
		}
	}

	// The fork's directory is gone: its last checkpoint stands in.
	if err := os.RemoveAll(fst.Workspace); err != nil {
		t.Fatal(err)
	}
	again, err := svc.Compare(ctx, admin, started.ID, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.B.Workspace != "checkpoint" || !reflect.DeepEqual(again.Files, wantFiles) || again.Diff != cmp.Diff {
		t.Fatalf("from the checkpoint: %s %+v\n%s", again.B.Workspace, again.Files, again.Diff)
	}

	if _, err := svc.Compare(ctx, admin, started.ID, ""); !errors.Is(err, service.ErrInvalid) {
		t.Fatalf("one side missing: %v", err)
	}
	if _, err := svc.Compare(ctx, admin, started.ID, "nope"); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("unknown side: %v", err)
	}
}
