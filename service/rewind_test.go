package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
)

// putTool writes content to path in the session's workspace, or deletes
// path when content is empty, and reports the change.
func putTool(workspace string) tool.Tool {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path"]}`)
	return tool.Func(model.ToolSpec{Name: "put", Parameters: schema}, func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
		var a struct{ Path, Content string }
		if err := json.Unmarshal(args, &a); err != nil {
			return tool.Result{}, err
		}
		p := filepath.Join(workspace, a.Path)
		if a.Content == "" {
			if err := os.Remove(p); err != nil {
				return tool.Result{}, err
			}
			tool.ReportModification(ctx, tool.Modification{Path: a.Path, Kind: tool.Deleted})
			return tool.Result{Output: "deleted " + a.Path}, nil
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return tool.Result{}, err
		}
		if err := os.WriteFile(p, []byte(a.Content), 0o644); err != nil {
			return tool.Result{}, err
		}
		tool.ReportModification(ctx, tool.Modification{Path: a.Path, Kind: tool.Changed})
		return tool.Result{Output: "wrote " + a.Path}, nil
	})
}

func put(path, content string) scripted.Step {
	b, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return scripted.Call("put", string(b))
}

// rewindService runs sessions in workspace with checkpoints in cs; each
// time a session is resolved it gets the next of scripts.
func rewindService(t *testing.T, cs *checkpoint.Store, workspace string, scripts ...*scripted.Model) *service.Service {
	var mu sync.Mutex
	next := func() *scripted.Model {
		mu.Lock()
		defer mu.Unlock()
		if len(scripts) == 0 {
			return scripted.Replies()
		}
		m := scripts[0]
		scripts = scripts[1:]
		return m
	}
	return newService(t, memory.New(), nil, "owner-1", func(c *service.Config) {
		c.Checkpoints = cs
		c.Runner.Checkpoint = cs.Hook(nil)
		c.Runner.Resolve = func(context.Context, *loop.SessionStarted, *loop.State) (*loop.Env, error) {
			reg, err := tool.NewRegistry(putTool(workspace))
			if err != nil {
				return nil, err
			}
			return &loop.Env{Model: next(), Tools: reg}, nil
		}
	})
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func waitDone(t *testing.T, s *loop.Session) *loop.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, err := s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A dry run says which files a rewind changes and changes nothing; the
// rewind restores them, sets the later steps aside, and resumes the
// session with the message.
func TestRewindRestoresFilesAndResumes(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	cs := &checkpoint.Store{Root: t.TempDir()}
	first := scripted.Replies(put("a.txt", "a1"), put("b.txt", "b1"), put("a.txt", "a2"), put("d/c.txt", "c"), put("b.txt", ""), scripted.Text("done"))
	second := scripted.Replies(scripted.Text("again"))
	svc := rewindService(t, cs, ws, first, second)
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

	dry, err := svc.Rewind(ctx, admin, id, service.RewindRequest{At: 2, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []checkpoint.Change{{Path: "a.txt", Change: "modified"}, {Path: "b.txt", Change: "added"}, {Path: "d/c.txt", Change: "deleted"}}
	if !reflect.DeepEqual(dry.Files, wantFiles) || !reflect.DeepEqual(dry.Steps, []int{3, 4, 5, 6}) || dry.Resumed {
		t.Fatalf("dry run: %+v", dry)
	}
	if after, _ := svc.Get(ctx, admin, id); after.Seq != before.Seq || readTree(t, ws)["a.txt"] != "a2" {
		t.Fatal("a dry run changed the session or its files")
	}

	res, err := svc.Rewind(ctx, admin, id, service.RewindRequest{At: 2, Message: "keep b"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.Session == nil || !reflect.DeepEqual(res.Files, wantFiles) {
		t.Fatalf("rewind: %+v", res)
	}
	if got := readTree(t, ws); !reflect.DeepEqual(got, map[string]string{"a.txt": "a1", "b.txt": "b1"}) {
		t.Fatalf("workspace after the rewind: %v", got)
	}
	st := waitDone(t, res.Session)
	if st.Status != loop.StatusCompleted || st.Answer != "again" {
		t.Fatalf("after the rewind: %s %q", st.Status, st.Answer)
	}
	msgs := second.Requests()[0].Messages
	if last := msgs[len(msgs)-1]; last.Role != model.RoleUser || last.Content != "keep b" {
		t.Fatalf("the model's last message after the rewind: %+v", last)
	}
	if p, _ := cs.PendingRestore(id); p != nil {
		t.Fatalf("a restore note is left: %+v", p)
	}
	var rewound []int
	for _, it := range st.Iterations {
		if it.Rewound {
			rewound = append(rewound, it.N)
		}
	}
	if !reflect.DeepEqual(rewound, []int{3, 4, 5, 6}) {
		t.Fatalf("rewound steps: %v", rewound)
	}

	// An ended session rewound without a message waits, paused.
	res, err = svc.Rewind(ctx, admin, id, service.RewindRequest{At: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed {
		t.Fatal("an ended session rewound without a message was resumed")
	}
	if st, _ := svc.Get(ctx, admin, id); st.Status != loop.StatusPaused || st.Reason != loop.ReasonRewound {
		t.Fatalf("after a rewind without a message: %s (%s)", st.Status, st.Reason)
	}
	if got := readTree(t, ws); !reflect.DeepEqual(got, map[string]string{"a.txt": "a1"}) {
		t.Fatalf("workspace after the rewind to step 1: %v", got)
	}
}

func TestRewindRefusals(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	cs := &checkpoint.Store{Root: t.TempDir()}
	svc := rewindService(t, cs, ws, scripted.Replies(put("a.txt", "1"), scripted.Text("done")))
	admin := service.Local("test")
	started, err := svc.Start(ctx, admin, loop.Task{Prompt: "edit", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, started.Session)
	for _, c := range []struct {
		name string
		req  service.RewindRequest
		id   string
		kind error
	}{
		{"step 0", service.RewindRequest{At: 0}, started.ID, service.ErrInvalid},
		{"a step it never reached", service.RewindRequest{At: 5}, started.ID, service.ErrInvalid},
		{"an unknown session", service.RewindRequest{At: 1}, "nope", service.ErrNotFound},
	} {
		if _, err := svc.Rewind(ctx, admin, c.id, c.req); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
	if _, err := svc.Rewind(ctx, service.Caller{Subject: "reader", Scopes: []service.Scope{service.ScopeRead}}, started.ID, service.RewindRequest{At: 1}); !errors.Is(err, service.ErrForbidden) {
		t.Errorf("without the control scope: %v", err)
	}
	none := newService(t, memory.New(), slow(1, 0), "owner-2")
	plain, err := none.Start(ctx, admin, loop.Task{Prompt: "x", Workspace: ws, Mode: loop.ModeSelfReasoning})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, plain.Session)
	if _, err := none.Rewind(ctx, admin, plain.ID, service.RewindRequest{At: 1}); !errors.Is(err, service.ErrInvalid) {
		t.Errorf("a service without checkpoints: %v", err)
	}

	// A running session is a conflict.
	block := make(chan struct{})
	defer close(block)
	running := newService(t, memory.New(), nil, "owner-3", func(c *service.Config) {
		c.Checkpoints = cs
		c.Runner.Resolve = func(context.Context, *loop.SessionStarted, *loop.State) (*loop.Env, error) {
			return &loop.Env{Model: model.Func(func(ctx context.Context, _ *model.Request, _ model.StreamFunc) (*model.Response, error) {
				select {
				case <-block:
				case <-ctx.Done():
				}
				return nil, ctx.Err()
			})}, nil
		}
	})
	s2, err := running.Start(ctx, admin, loop.Task{Prompt: "busy", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := running.Rewind(ctx, admin, s2.ID, service.RewindRequest{At: 1}); !errors.Is(err, service.ErrConflict) {
		t.Errorf("rewinding a running session: %v", err)
	}
	if _, err := running.Terminate(ctx, admin, s2.ID, "done"); err != nil {
		t.Fatal(err)
	}
}

// A restore note left by a rewind that a crash cut short is settled by
// the next process to take the session: finished when the log holds the
// rewind, dropped when it does not.
func TestRecoverSettlesRewindsCutShort(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	cs := &checkpoint.Store{Root: t.TempDir()}
	svc := rewindService(t, cs, ws, scripted.Replies(put("a.txt", "1"), put("a.txt", "2"), scripted.Text("done")))
	admin := service.Local("test")
	started, err := svc.Start(ctx, admin, loop.Task{Prompt: "edit", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, started.Session)
	ck := st.CheckpointAt(1)

	// Never recorded: the note goes, the files stay.
	if err := cs.BeginRestore(st.ID, checkpoint.Pending{Seq: st.Seq + 1, Checkpoint: ck.ID, Workspace: ws}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Recover(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if p, _ := cs.PendingRestore(st.ID); p != nil || readTree(t, ws)["a.txt"] != "2" {
		t.Fatalf("an unrecorded rewind: note %v, a.txt %q", p, readTree(t, ws)["a.txt"])
	}

	// Recorded, files not restored: Recover restores them.
	res, err := svc.Rewind(ctx, admin, st.ID, service.RewindRequest{At: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed {
		t.Fatal("resumed")
	}
	rewoundAt := st.Seq + 1
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cs.BeginRestore(st.ID, checkpoint.Pending{Seq: rewoundAt, Checkpoint: ck.ID, Workspace: ws}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Recover(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if p, _ := cs.PendingRestore(st.ID); p != nil || readTree(t, ws)["a.txt"] != "1" {
		t.Fatalf("a recorded rewind: note %v, a.txt %q", p, readTree(t, ws)["a.txt"])
	}
}
