package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
)

// forkService runs each session in its own recorded workspace with
// checkpoints in cs; the nth session resolved (a resume counts) plays
// scripts[n].
func forkService(t *testing.T, st store.Store, cs *checkpoint.Store, owner string, scripts ...*scripted.Model) *service.Service {
	var mu sync.Mutex
	return newService(t, st, nil, owner, func(c *service.Config) {
		c.Checkpoints = cs
		c.Runner.Checkpoint = cs.Hook(nil)
		c.Runner.Resolve = func(_ context.Context, spec *loop.SessionStarted, _ *loop.State) (*loop.Env, error) {
			mu.Lock()
			m := scripted.Replies()
			if len(scripts) > 0 {
				m, scripts = scripts[0], scripts[1:]
			}
			mu.Unlock()
			reg, err := tool.NewRegistry(putTool(spec.Workspace))
			if err != nil {
				return nil, err
			}
			return &loop.Env{Model: m, Tools: reg}, nil
		}
	})
}

// A fork at step 2 gets step 2's files in a new directory and the log up
// to there, runs on with its own model, and leaves the original's log and
// files as they were; two forks of one session run side by side.
func TestForkRunsFromAStepInItsOwnWorkspace(t *testing.T) {
	ctx := t.Context()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cs := &checkpoint.Store{Root: t.TempDir()}
	orig := scripted.Replies(put("a.txt", "a1"), put("b.txt", "b1"), put("a.txt", "a2"), scripted.Text("done"))
	fork1 := scripted.Replies(put("c.txt", "fork 1"), scripted.Text("fork 1 done"))
	fork2 := scripted.Replies(put("c.txt", "fork 2"), scripted.Text("fork 2 done"))
	svc := forkService(t, memory.New(), cs, "owner-1", orig, fork1, fork2)
	admin := service.Local("test")
	started, err := svc.Start(ctx, admin, loop.Task{Prompt: "edit", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, started.Session); st.Status != loop.StatusCompleted {
		t.Fatalf("%s %s", st.Status, st.Detail)
	}
	id := started.ID
	before, _ := svc.Get(ctx, admin, id)
	origFiles := readTree(t, ws)

	f1, err := svc.Fork(ctx, admin, id, service.ForkRequest{At: 2, Message: "try c"})
	if err != nil {
		t.Fatal(err)
	}
	f2, err := svc.Fork(ctx, admin, id, service.ForkRequest{At: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []*service.Started{f1, f2} {
		st := waitDone(t, f.Session)
		want := fmt.Sprintf("fork %d done", i+1)
		if st.Status != loop.StatusCompleted || st.Answer != want {
			t.Fatalf("fork %d: %s %q %s", i+1, st.Status, st.Answer, st.Detail)
		}
		if st.ForkedFrom == nil || st.ForkedFrom.ID != id || st.ForkedFrom.Iteration != 2 {
			t.Fatalf("fork %d: forked_from %+v", i+1, st.ForkedFrom)
		}
		wantDir := filepath.Join(filepath.Dir(ws), "ws-fork-"+f.ID)
		if st.Workspace != wantDir {
			t.Fatalf("fork %d workspace %s, want %s", i+1, st.Workspace, wantDir)
		}
		wantFiles := map[string]string{"a.txt": "a1", "b.txt": "b1", "c.txt": fmt.Sprintf("fork %d", i+1)}
		if got := readTree(t, st.Workspace); !reflect.DeepEqual(got, wantFiles) {
			t.Fatalf("fork %d files %v, want %v", i+1, got, wantFiles)
		}
		if len(st.Iterations) != 4 || st.Iterations[1].ToolCalls[0].Name != "put" {
			t.Fatalf("fork %d steps: %+v", i+1, st.Iterations)
		}
	}
	msgs := fork1.Requests()[0].Messages
	if last := msgs[len(msgs)-1]; last.Content != "try c" {
		t.Fatalf("the fork's model read last %+v, want the message", last)
	}
	after, _ := svc.Get(ctx, admin, id)
	if after.Seq != before.Seq || !reflect.DeepEqual(readTree(t, ws), origFiles) {
		t.Fatal("a fork changed the original's log or files")
	}

	for _, at := range []int{0, 5} {
		if _, err := svc.Fork(ctx, admin, id, service.ForkRequest{At: at}); !errors.Is(err, service.ErrInvalid) {
			t.Fatalf("fork at %d: %v, want invalid", at, err)
		}
	}
	if _, err := svc.Fork(ctx, admin, "nope", service.ForkRequest{At: 1}); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("fork of an unknown session: %v", err)
	}
	if _, err := svc.Fork(ctx, service.Caller{Tenant: "other", Scopes: []service.Scope{service.ScopeWrite}}, id, service.ForkRequest{At: 1}); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("fork of another tenant's session: %v", err)
	}
	noCk := newService(t, memory.New(), func() *scripted.Model { return scripted.Replies() }, "owner-2")
	if _, err := noCk.Fork(ctx, admin, id, service.ForkRequest{At: 1}); !errors.Is(err, service.ErrInvalid) {
		t.Fatalf("fork without checkpoints: %v", err)
	}
	if entries, _ := filepath.Glob(filepath.Join(cs.Root, "*.fork.json")); len(entries) != 0 {
		t.Fatalf("fork notes left: %v", entries)
	}
}

// A fork of a rewound session at a step that was redone gets the redone
// step's files, not those of the step set aside.
func TestForkFollowsTheLiveSteps(t *testing.T) {
	ctx := t.Context()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cs := &checkpoint.Store{Root: t.TempDir()}
	first := scripted.Replies(put("a.txt", "1"), put("a.txt", "2 set aside"), scripted.Text("done"))
	redo := scripted.Replies(put("a.txt", "2 redone"), scripted.Text("done again"))
	fork := scripted.Replies(scripted.Text("fork done"))
	svc := forkService(t, memory.New(), cs, "owner-1", first, redo, fork)
	admin := service.Local("test")
	started, err := svc.Start(ctx, admin, loop.Task{Prompt: "edit", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, started.Session)
	res, err := svc.Rewind(ctx, admin, started.ID, service.RewindRequest{At: 1, Message: "again"})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, res.Session)
	f, err := svc.Fork(ctx, admin, started.ID, service.ForkRequest{At: 2})
	if err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, f.Session)
	if st.Answer != "fork done" {
		t.Fatalf("fork: %s %q %s", st.Status, st.Answer, st.Detail)
	}
	if got := readTree(t, st.Workspace); got["a.txt"] != "2 redone" {
		t.Fatalf("fork files %v, want the redone step's", got)
	}
}

// A fork a killed process left half made — a note, a workspace, a
// half-exported copy and a shadow repository, but no session — is removed
// by the next recovery pass; one that was recorded keeps its files and
// loses only its note; one a live process is making is left alone.
func TestRecoverRemovesWhatAnUnfinishedForkLeft(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	cs := &checkpoint.Store{Root: t.TempDir()}
	svc := forkService(t, st, cs, "owner-1")
	admin := service.Local("test")
	host, _ := os.Hostname()
	base := t.TempDir()
	write := func(id, owner string, recorded bool) (workspace, partial string) {
		t.Helper()
		workspace = filepath.Join(base, "ws-fork-"+id)
		partial = filepath.Join(base, ".ws-fork-"+id+".export-123")
		for _, d := range []string{workspace, partial, filepath.Join(cs.Root, id+".git")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := json.Marshal(map[string]any{"id": id, "from": "orig", "workspace": workspace, "owner": owner, "time": time.Now()})
		if err := os.WriteFile(filepath.Join(cs.Root, id+".fork.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if recorded {
			if err := st.Append(ctx, loop.NewEvent(id, 1, time.Now(), &loop.SessionStarted{Task: "forked"}),
				loop.NewEvent(id, 2, time.Now(), &loop.SessionEnded{Status: loop.StatusCompleted})); err != nil {
				t.Fatal(err)
			}
		}
		return workspace, partial
	}
	dead := fmt.Sprintf("%s:%d:abc", host, 1<<22+12345) // beyond pid_max's default
	cutWs, cutPartial := write("cut", dead, false)
	doneWs, _ := write("done", dead, true)
	liveWs, _ := write("live", fmt.Sprintf("%s:%d:xyz", host, os.Getppid()), false)

	if _, err := svc.Recover(ctx, admin); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if exists(cutWs) || exists(cutPartial) || exists(filepath.Join(cs.Root, "cut.git")) || exists(filepath.Join(cs.Root, "cut.fork.json")) {
		t.Fatal("an unrecorded fork's files or note are left")
	}
	if !exists(doneWs) || !exists(filepath.Join(cs.Root, "done.git")) || exists(filepath.Join(cs.Root, "done.fork.json")) {
		t.Fatal("a recorded fork lost its files, or kept its note")
	}
	if !exists(liveWs) || !exists(filepath.Join(cs.Root, "live.fork.json")) {
		t.Fatal("a live process's fork was touched")
	}
}
