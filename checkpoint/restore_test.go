package checkpoint

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Restoring an earlier checkpoint in place brings back deleted files,
// the old content and mode of changed ones, removes files added since
// (and the directories that leaves empty), and never touches the
// workspace's .git, ignored files or files over the size limit; Changes
// says exactly that beforehand, and a second Restore changes nothing.
func TestRestoreInPlace(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	write(t, ws, "a.txt", "one\n")
	write(t, ws, "dir/b.txt", "two\n")
	write(t, ws, "run.sh", "#!/bin/sh\n")
	write(t, ws, "same.txt", "unchanged\n")
	write(t, ws, ".gitignore", "build/\n")
	s := &Store{Root: t.TempDir(), MaxFileSize: 1024}
	id, err := s.Save(ctx, "s1", ws, "iteration 1")
	if err != nil {
		t.Fatal(err)
	}
	want := tree(t, ws)
	userGit := tree(t, filepath.Join(ws, ".git"))

	write(t, ws, "a.txt", "changed\n")
	if err := os.Remove(filepath.Join(ws, "dir/b.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(ws, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "new/deep/c.txt", "three\n")
	write(t, ws, "build/out.bin", "ignored")
	write(t, ws, "big.dat", strings.Repeat("x", 2048))
	if _, err := s.Save(ctx, "s1", ws, "iteration 2"); err != nil {
		t.Fatal(err)
	}

	wantChanges := []Change{
		{"a.txt", Modified}, {"dir/b.txt", Added}, {"new/deep/c.txt", Deleted}, {"run.sh", Modified},
	}
	got, err := s.Changes(ctx, "s1", id, ws)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantChanges) {
		t.Fatalf("changes:\n got %v\nwant %v", got, wantChanges)
	}
	if _, err := os.Stat(filepath.Join(ws, "new/deep/c.txt")); err != nil {
		t.Fatal("Changes changed the workspace")
	}

	done, err := s.Restore(ctx, "s1", id, ws)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(done, wantChanges) {
		t.Fatalf("restore did %v, want %v", done, wantChanges)
	}
	after := tree(t, ws)
	if after["build/out.bin"] != "ignored" || len(after["big.dat"]) != 2048 {
		t.Fatalf("an ignored or oversized file was touched: %v", after)
	}
	delete(after, "build/out.bin")
	delete(after, "big.dat")
	if !equal(after, want) {
		t.Fatalf("restored workspace:\n got %v\nwant %v", after, want)
	}
	if _, err := os.Stat(filepath.Join(ws, "new")); !os.IsNotExist(err) {
		t.Errorf("the directory deleting emptied is still there: %v", err)
	}
	if !equal(tree(t, filepath.Join(ws, ".git")), userGit) {
		t.Error("the workspace's own .git changed")
	}
	again, err := s.Restore(ctx, "s1", id, ws)
	if err != nil || len(again) != 0 {
		t.Fatalf("a second restore: %v, %v", again, err)
	}
}

// A file where the checkpoint has a directory, and the other way round.
func TestRestoreSwapsFilesAndDirectories(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	write(t, ws, "x/inner.txt", "in a directory")
	write(t, ws, "y", "a file")
	s := &Store{Root: t.TempDir()}
	id, err := s.Save(ctx, "s1", ws, "1")
	if err != nil {
		t.Fatal(err)
	}
	want := tree(t, ws)
	if err := os.RemoveAll(filepath.Join(ws, "x")); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "x", "now a file")
	if err := os.Remove(filepath.Join(ws, "y")); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "y/inner.txt", "now a directory")
	if _, err := s.Restore(ctx, "s1", id, ws); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); !equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestRestoreIntoAMissingWorkspace(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	write(t, ws, "a.txt", "one")
	write(t, ws, "d/b.txt", "two")
	s := &Store{Root: t.TempDir()}
	id, err := s.Save(ctx, "s1", ws, "1")
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "gone")
	ch, err := s.Changes(ctx, "s1", id, gone)
	if err != nil || !reflect.DeepEqual(ch, []Change{{"a.txt", Added}, {"d/b.txt", Added}}) {
		t.Fatalf("changes into a missing workspace: %v %v", ch, err)
	}
	if _, err := s.Restore(ctx, "s1", id, gone); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, gone); !equal(got, map[string]string{"a.txt": "one", "d/b.txt": "two"}) {
		t.Fatalf("got %v", got)
	}
	if _, err := s.Changes(ctx, "s1", strings.Repeat("0", 40), ws); !errors.Is(err, ErrNotFound) {
		t.Errorf("changes to an unknown checkpoint: %v", err)
	}
	if _, err := s.Restore(ctx, "other", id, ws); !errors.Is(err, ErrNotFound) {
		t.Errorf("restore from a session without checkpoints: %v", err)
	}
}

func TestPendingRestoreNotes(t *testing.T) {
	s := &Store{Root: filepath.Join(t.TempDir(), "ck")}
	if p, err := s.PendingRestore("s1"); p != nil || err != nil {
		t.Fatalf("no note yet: %v %v", p, err)
	}
	if ids, err := s.PendingRestores(); len(ids) != 0 || err != nil {
		t.Fatalf("no notes yet: %v %v", ids, err)
	}
	want := Pending{Seq: 42, Checkpoint: strings.Repeat("a", 40), Workspace: "/w"}
	if err := s.BeginRestore("s1", want); err != nil {
		t.Fatal(err)
	}
	p, err := s.PendingRestore("s1")
	if err != nil || p == nil || *p != want {
		t.Fatalf("note read back: %v %v", p, err)
	}
	if ids, _ := s.PendingRestores(); !reflect.DeepEqual(ids, []string{"s1"}) {
		t.Fatalf("notes: %v", ids)
	}
	if err := s.EndRestore("s1"); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRestore("s1"); err != nil {
		t.Fatalf("ending a note twice: %v", err)
	}
	if p, _ := s.PendingRestore("s1"); p != nil {
		t.Fatalf("note left: %v", p)
	}
	if err := s.BeginRestore("../x", want); err == nil {
		t.Error("a session id with a path separator was accepted")
	}
}
