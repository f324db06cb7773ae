package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
)

// workflowEngine is a fakeEngine that says whether a session's workflow
// is open.
type workflowEngine struct {
	fakeEngine
	open    bool
	openErr error // what Open answers
}

func (e *workflowEngine) Open(context.Context, string) (bool, error) { return e.open, e.openErr }

// A server whose sessions a workflow engine runs rewinds one that ended
// once its workflow has ended too: it refuses while the workflow is
// open, when the engine cannot say, and when the checkpoint is not
// reachable; then it records the same events a local rewind does,
// restores the files, and hands the resume to the engine, running
// nothing itself.
func TestRewindOnAnEngine(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	cs := &checkpoint.Store{Root: t.TempDir()}
	st := memory.New()
	admin := service.Local("test")
	// A worker's runner runs the session first: on the store itself,
	// without a lease, as `agentloop worker` does.
	worker, err := loop.New(loop.Config{Log: st, Checkpoint: cs.Hook(nil),
		Resolve: func(context.Context, *loop.SessionStarted, *loop.State) (*loop.Env, error) {
			reg, err := tool.NewRegistry(putTool(ws))
			if err != nil {
				return nil, err
			}
			return &loop.Env{Model: scripted.Replies(put("a.txt", "a1"), put("b.txt", "b1"), put("a.txt", "a2"), scripted.Text("done")), Tools: reg}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := worker.Start(ctx, loop.Task{Prompt: "edit", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	ended := waitDone(t, sess)
	if ended.Status != loop.StatusCompleted {
		t.Fatalf("%s %s", ended.Status, ended.Detail)
	}
	id := ended.ID
	reader := newService(t, st, nil, "reader")

	server := func(eng service.Engine, cs *checkpoint.Store) *service.Service {
		return newService(t, st, nil, "server", func(c *service.Config) {
			c.Checkpoints = cs
			c.Engine = eng
		})
	}
	unchanged := func(what string) {
		t.Helper()
		if now, _ := reader.Get(ctx, admin, id); now.Seq != ended.Seq || readTree(t, ws)["a.txt"] != "a2" {
			t.Fatalf("%s changed the session or its files", what)
		}
	}
	req := service.RewindRequest{At: 1, Message: "only a1"}
	if _, err := server(&fakeEngine{}, cs).Rewind(ctx, admin, id, req); !errors.Is(err, service.ErrInvalid) || !strings.Contains(err.Error(), "cannot say whether") {
		t.Fatalf("an engine that cannot say whether the workflow ended: %v", err)
	}
	unchanged("a refused rewind")
	open := &workflowEngine{open: true}
	if _, err := server(open, cs).Rewind(ctx, admin, id, req); !errors.Is(err, service.ErrConflict) || !strings.Contains(err.Error(), "workflow is still running") {
		t.Fatalf("a rewind while the workflow runs: %v", err)
	}
	if _, err := server(open, cs).Rewind(ctx, admin, id, service.RewindRequest{At: 1, DryRun: true}); !errors.Is(err, service.ErrConflict) {
		t.Fatalf("a dry run while the workflow runs: %v", err)
	}
	unchanged("a refused rewind")
	unreachable := &workflowEngine{openErr: errors.New("connection refused")}
	if _, err := server(unreachable, cs).Rewind(ctx, admin, id, req); err == nil || !strings.Contains(err.Error(), "could not ask the workflow engine") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("a rewind when the engine cannot be asked: %v", err)
	}
	unchanged("a rewind the engine could not be asked about")
	if len(unreachable.runs) != 0 || len(unreachable.controls) != 0 {
		t.Fatalf("a refused rewind reached the engine: runs %v, controls %v", unreachable.runs, unreachable.controls)
	}
	elsewhere := &checkpoint.Store{Root: t.TempDir()}
	if _, err := server(&workflowEngine{}, elsewhere).Rewind(ctx, admin, id, req); !errors.Is(err, service.ErrInvalid) || !strings.Contains(err.Error(), "not on this machine") {
		t.Fatalf("a rewind whose checkpoint is not here: %v", err)
	}
	unchanged("a refused rewind")

	eng := &workflowEngine{}
	res, err := server(eng, cs).Rewind(ctx, admin, id, req)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []checkpoint.Change{{Path: "a.txt", Change: "modified"}, {Path: "b.txt", Change: "deleted"}}
	if !res.Resumed || res.Session != nil || !reflect.DeepEqual(res.Files, wantFiles) || !reflect.DeepEqual(res.Steps, []int{2, 3, 4}) {
		t.Fatalf("rewind: %+v", res)
	}
	if got := readTree(t, ws); !reflect.DeepEqual(got, map[string]string{"a.txt": "a1"}) {
		t.Fatalf("workspace after the rewind: %v", got)
	}
	if !reflect.DeepEqual(eng.runs, []string{id}) || !reflect.DeepEqual(eng.controls, []store.ControlKind{store.ControlResume}) {
		t.Fatalf("the engine got runs %v, controls %v; want the session run and resumed", eng.runs, eng.controls)
	}
	events, err := st.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var types []loop.EventType
	for _, e := range events[ended.Seq:] {
		types = append(types, e.Type)
	}
	if !reflect.DeepEqual(types, []loop.EventType{loop.TypeSessionRewound, loop.TypeMessageAdded, loop.TypeSessionResumed}) {
		t.Fatalf("recorded after the end: %v", types)
	}
	now, _ := reader.Get(ctx, admin, id)
	last := now.Conversation[len(now.Conversation)-1]
	if now.Status != loop.StatusRunning || now.CurrentIteration != 1 || last.Role != model.RoleUser || last.Content != "only a1" {
		t.Fatalf("the state a worker steps on from: %s at step %d, last message %+v", now.Status, now.CurrentIteration, last)
	}
	if p, err := cs.PendingRestore(id); p != nil || err != nil {
		t.Fatalf("the restore note outlived the rewind: %+v %v", p, err)
	}

	// A server killed after the commit and before the restore leaves the
	// note; the next server's recovery pass restores the files.
	rewound := events[ended.Seq].Data.(*loop.SessionRewound)
	if err := cs.BeginRestore(id, checkpoint.Pending{Seq: ended.Seq + 1, Checkpoint: rewound.Checkpoint, Workspace: ws}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("not restored"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := server(&workflowEngine{}, cs).Recover(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, ws); !reflect.DeepEqual(got, map[string]string{"a.txt": "a1"}) {
		t.Fatalf("workspace after the recovery pass: %v", got)
	}
	if p, err := cs.PendingRestore(id); p != nil || err != nil {
		t.Fatalf("the recovery pass left the note: %+v %v", p, err)
	}

	// A restore still owed (the rewind's own failed) is made before a
	// resume reaches the engine; one that cannot be made stops the resume.
	owe := func(ckID string) {
		t.Helper()
		if err := cs.BeginRestore(id, checkpoint.Pending{Seq: ended.Seq + 1, Checkpoint: ckID, Workspace: ws}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("not restored"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	owe("no-such-checkpoint")
	stuck := &workflowEngine{}
	if _, err := server(stuck, cs).Resume(ctx, admin, id, ""); err == nil || !strings.Contains(err.Error(), "the resume was not sent") {
		t.Fatalf("a resume whose restore fails: %v", err)
	}
	// A reply would let a worker step on too: held back the same way.
	if _, err := server(stuck, cs).Reply(ctx, admin, id, "go on"); err == nil || !strings.Contains(err.Error(), "the reply was not sent") {
		t.Fatalf("a reply whose restore fails: %v", err)
	}
	if len(stuck.runs) != 0 || len(stuck.controls) != 0 || readTree(t, ws)["a.txt"] != "not restored" {
		t.Fatalf("a resume or reply whose restore failed reached the engine (runs %v, controls %v) or touched the files", stuck.runs, stuck.controls)
	}
	// A pause lets nothing step on: it is sent whatever is owed.
	if _, err := server(stuck, cs).Pause(ctx, admin, id, ""); err != nil || !reflect.DeepEqual(stuck.controls, []store.ControlKind{store.ControlPause}) {
		t.Fatalf("a pause while a restore is owed: %v, engine controls %v", err, stuck.controls)
	}
	stuck.controls = nil
	if p, _ := cs.PendingRestore(id); p == nil {
		t.Fatal("a restore that failed is no longer owed")
	}
	if err := cs.EndRestore(id); err != nil {
		t.Fatal(err)
	}
	owe(rewound.Checkpoint)
	// Another server holds the session: the resume waits for it.
	other, err := st.Acquire(ctx, id, "another-server", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server(stuck, cs).Resume(ctx, admin, id, ""); !errors.Is(err, service.ErrConflict) || !strings.Contains(err.Error(), "send the resume again") {
		t.Fatalf("a resume while another server holds the session: %v", err)
	}
	if len(stuck.runs) != 0 || readTree(t, ws)["a.txt"] != "not restored" {
		t.Fatalf("a resume refused for a held lease reached the engine (runs %v) or touched the files", stuck.runs)
	}
	if err := st.Release(ctx, other); err != nil {
		t.Fatal(err)
	}
	resumer := &workflowEngine{}
	if _, err := server(resumer, cs).Resume(ctx, admin, id, ""); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, ws); !reflect.DeepEqual(got, map[string]string{"a.txt": "a1"}) || !reflect.DeepEqual(resumer.controls, []store.ControlKind{store.ControlResume}) {
		t.Fatalf("a resume owing a restore: workspace %v, engine controls %v", got, resumer.controls)
	}
	if p, err := cs.PendingRestore(id); p != nil || err != nil {
		t.Fatalf("the resume left the note: %+v %v", p, err)
	}
}
