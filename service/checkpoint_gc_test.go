package service_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/memory"
)

// Deleting sessions of a chain (orig, its fork f1, f1's fork f2) in any
// order removes each one's checkpoints as soon as no living fork reads
// them, and only then: after every delete, each living session still
// forks, compares and rewinds with the files of orig's first step; once
// all are deleted the checkpoints directory is empty.
func TestDeleteRemovesCheckpointsNoLivingForkReads(t *testing.T) {
	cases := []struct {
		name    string
		deletes []string
		left    [][]string // repositories after each delete
	}{
		{"the newest fork first", []string{"f2", "f1", "orig"}, [][]string{{"f1", "orig"}, {"orig"}, nil}},
		{"the original first", []string{"orig", "f1", "f2"}, [][]string{{"f1", "f2", "orig"}, {"f1", "f2", "orig"}, nil}},
		{"the middle first", []string{"f1", "f2", "orig"}, [][]string{{"f1", "f2", "orig"}, {"orig"}, nil}},
		{"the original, the newest, the middle", []string{"orig", "f2", "f1"}, [][]string{{"f1", "f2", "orig"}, {"f1", "orig"}, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			ws := filepath.Join(t.TempDir(), "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			cs := &checkpoint.Store{Root: t.TempDir()}
			scripts := []*scripted.Model{
				scripted.Replies(put("a.txt", "o1"), put("a.txt", "o2"), scripted.Text("orig done")),
				scripted.Replies(put("b.txt", "f1"), scripted.Text("f1 done")),
				scripted.Replies(put("c.txt", "f2"), scripted.Text("f2 done")),
			}
			for range 12 { // the forks and rewinds that check the living sessions
				scripts = append(scripts, scripted.Replies(scripted.Text("checked")))
			}
			svc := forkService(t, memory.New(), cs, "owner-1", scripts...)
			admin := service.Local("test")
			started, err := svc.Start(ctx, admin, loop.Task{Prompt: "edit", Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			waitDone(t, started.Session)
			ids := map[string]string{"orig": started.ID}
			for _, f := range []struct {
				name, from string
				at         int
			}{{"f1", "orig", 2}, {"f2", "f1", 3}} {
				s, err := svc.Fork(ctx, admin, ids[f.from], service.ForkRequest{At: f.at})
				if err != nil {
					t.Fatal(err)
				}
				if st := waitDone(t, s.Session); st.Status != loop.StatusCompleted {
					t.Fatalf("%s: %s %s", f.name, st.Status, st.Detail)
				}
				ids[f.name] = s.ID
			}
			names := map[string]string{}
			for n, id := range ids {
				names[id] = n
			}
			living := map[string]bool{"orig": true, "f1": true, "f2": true}
			for i, name := range tc.deletes {
				if err := svc.Delete(ctx, admin, ids[name]); err != nil {
					t.Fatalf("delete %s: %v", name, err)
				}
				delete(living, name)
				if got := repositories(t, cs, names); !slices.Equal(got, tc.left[i]) {
					t.Fatalf("after deleting %v: checkpoints of %v, want %v", tc.deletes[:i+1], got, tc.left[i])
				}
				for name := range living {
					usable(t, svc, ids[name], name)
				}
			}
			left, _ := os.ReadDir(cs.Root)
			for _, e := range left {
				if !strings.HasPrefix(e.Name(), ".") {
					t.Fatalf("left in the checkpoints directory: %s", e.Name())
				}
			}
		})
	}
}

// repositories names the sessions that have checkpoints in cs.
func repositories(t *testing.T, cs *checkpoint.Store, names map[string]string) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(cs.Root, "*.git"))
	var out []string
	for _, d := range dirs {
		id := strings.TrimSuffix(filepath.Base(d), ".git")
		if names[id] == "" {
			t.Fatalf("checkpoints of an unknown session %s", id)
		}
		out = append(out, names[id])
	}
	sort.Strings(out)
	return out
}

// usable forks session id at step 1, compares the fork with it, deletes
// the fork, then rewinds id to step 1: each reads orig's first snapshot.
func usable(t *testing.T, svc *service.Service, id, name string) {
	t.Helper()
	ctx := t.Context()
	admin := service.Local("test")
	f, err := svc.Fork(ctx, admin, id, service.ForkRequest{At: 1})
	if err != nil {
		t.Fatalf("fork of %s: %v", name, err)
	}
	fst := waitDone(t, f.Session)
	if b, _ := os.ReadFile(filepath.Join(fst.Workspace, "a.txt")); string(b) != "o1" {
		t.Fatalf("the fork of %s at step 1 has a.txt %q", name, b)
	}
	if _, err := svc.Compare(ctx, admin, id, f.ID); err != nil {
		t.Fatalf("compare %s with its fork: %v", name, err)
	}
	if err := svc.Delete(ctx, admin, f.ID); err != nil {
		t.Fatalf("delete the fork of %s: %v", name, err)
	}
	st, err := svc.Get(ctx, admin, id)
	if err != nil {
		t.Fatal(err)
	}
	// With a message it runs on to its end, so it can be deleted later.
	res, err := svc.Rewind(ctx, admin, id, service.RewindRequest{At: 1, Message: "again"})
	if err != nil {
		t.Fatalf("rewind %s: %v", name, err)
	}
	if b, _ := os.ReadFile(filepath.Join(st.Workspace, "a.txt")); string(b) != "o1" {
		t.Fatalf("%s rewound to step 1 has a.txt %q", name, b)
	}
	if st := waitDone(t, res.Session); st.Status != loop.StatusCompleted {
		t.Fatalf("%s after its rewind: %s %s", name, st.Status, st.Detail)
	}
}

// A service keeping no checkpoints (--checkpoints off) deletes sessions
// and leaves any checkpoints directory alone.
func TestDeleteWithoutCheckpointsLeavesThemAlone(t *testing.T) {
	ctx := t.Context()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cs := &checkpoint.Store{Root: t.TempDir()}
	st := memory.New()
	svc := forkService(t, st, cs, "owner-1", scripted.Replies(put("a.txt", "1"), scripted.Text("done")))
	admin := service.Local("test")
	started, err := svc.Start(ctx, admin, loop.Task{Prompt: "edit", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, started.Session)
	off := newService(t, st, func() *scripted.Model { return scripted.Replies() }, "owner-2")
	if err := off.Delete(ctx, admin, started.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cs.Root, started.ID+".git", "HEAD")); err != nil {
		t.Fatalf("a service without checkpoints touched them: %v", err)
	}
	if err := off.Delete(ctx, admin, started.ID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
