package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tree reads every file under dir (skipping .git) as path → content,
// with "+x" appended to the path of executables.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		if info.Mode()&0o100 != 0 {
			rel += "+x"
		}
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestSaveExportRoundTrip(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	// The user's own repository, which must stay untouched.
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	userGit := tree(t, filepath.Join(ws, ".git"))
	write(t, ws, "a.txt", "one\n")
	write(t, ws, "dir/b.txt", "two\n")
	write(t, ws, "run.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(filepath.Join(ws, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, ws, ".gitignore", "build/\n")
	write(t, ws, "build/out.bin", "ignored")
	write(t, ws, "big.dat", strings.Repeat("x", 2048))
	write(t, ws, "sub/.git/config", "nested repository metadata")

	s := &Store{Root: t.TempDir(), MaxFileSize: 1024}
	id1, err := s.Save(ctx, "s1", ws, "iteration 1")
	if err != nil {
		t.Fatal(err)
	}
	want1 := tree(t, ws)
	delete(want1, "build/out.bin")
	delete(want1, "big.dat")

	write(t, ws, "a.txt", "changed\n")
	if err := os.Remove(filepath.Join(ws, "dir/b.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "c.txt", "three\n")
	id2, err := s.Save(ctx, "s1", ws, "iteration 2")
	if err != nil {
		t.Fatal(err)
	}
	if id1 == id2 {
		t.Fatalf("two different workspaces got one id %s", id1)
	}
	want2 := tree(t, ws)
	delete(want2, "build/out.bin")
	delete(want2, "big.dat")

	for _, c := range []struct {
		id   string
		want map[string]string
	}{{id1, want1}, {id2, want2}} {
		out := filepath.Join(t.TempDir(), "fork")
		if err := s.Export(ctx, "s1", c.id, out); err != nil {
			t.Fatal(err)
		}
		if got := tree(t, out); !equal(got, c.want) {
			t.Errorf("export %s:\n got %v\nwant %v", c.id, got, c.want)
		}
		if _, err := os.Stat(filepath.Join(out, "sub", ".git")); err == nil {
			t.Errorf("export %s holds a nested .git", c.id)
		}
	}
	if got := tree(t, filepath.Join(ws, ".git")); !equal(got, userGit) {
		t.Error("the workspace's own .git changed")
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "refs", "heads")); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("git", "-C", ws, "rev-parse", "-q", "--verify", "HEAD").Output(); len(out) != 0 {
		t.Errorf("the user's repository got a commit: %s", out)
	}
}

func TestExportErrors(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	write(t, ws, "a.txt", "one")
	s := &Store{Root: t.TempDir()}
	id, err := s.Save(ctx, "s1", ws, "x")
	if err != nil {
		t.Fatal(err)
	}
	exists := t.TempDir()
	if err := s.Export(ctx, "s1", id, exists); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("export into an existing directory: %v", err)
	}
	if err := s.Export(ctx, "s2", id, filepath.Join(t.TempDir(), "x")); !errors.Is(err, ErrNotFound) {
		t.Errorf("export from a session without checkpoints: %v", err)
	}
	bad := strings.Repeat("0", 40)
	out := filepath.Join(t.TempDir(), "x")
	if err := s.Export(ctx, "s1", bad, out); !errors.Is(err, ErrNotFound) {
		t.Errorf("export of an unknown id: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed export left its directory")
	}
	if err := s.Export(ctx, "s1", "HEAD; rm -rf /", out); !errors.Is(err, ErrNotFound) {
		t.Errorf("export of a malformed id: %v", err)
	}
	if _, err := s.Save(ctx, "../x", ws, "x"); err == nil {
		t.Error("a session id with a path separator was accepted")
	}
}

func TestSaveIgnoresUserGitEnvironment(t *testing.T) {
	ctx := t.Context()
	other := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", other).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_INDEX_FILE", filepath.Join(other, ".git", "index"))
	ws := t.TempDir()
	write(t, ws, "a.txt", "one")
	s := &Store{Root: t.TempDir()}
	if _, err := s.Save(ctx, "s1", ws, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, ".git", "index")); err == nil {
		t.Error("Save wrote the index named by the user's GIT_INDEX_FILE")
	}
}

func TestForkReadsTheOriginalsSnapshots(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	write(t, ws, "a.txt", "one")
	s := &Store{Root: t.TempDir()}
	id, err := s.Save(ctx, "orig", ws, "1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fork(ctx, "orig", "fork", id); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ws")
	if err := s.Export(ctx, "fork", id, out); err != nil {
		t.Fatal(err)
	}
	write(t, out, "b.txt", "two")
	id2, err := s.Save(ctx, "fork", out, "2")
	if err != nil {
		t.Fatal(err)
	}
	// A fork of the fork still reads the first snapshot.
	if err := s.Fork(ctx, "fork", "fork2", id2); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(t.TempDir(), "ws")
	if err := s.Export(ctx, "fork2", id, out2); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, out2); !equal(got, map[string]string{"a.txt": "one"}) {
		t.Errorf("got %v", got)
	}
	if err := s.Fork(ctx, "orig", "fork", id); err == nil {
		t.Error("a second fork into one session was accepted")
	}
	if err := s.Fork(ctx, "none", "x", id); !errors.Is(err, ErrNotFound) {
		t.Errorf("fork of a session without checkpoints: %v", err)
	}
}
