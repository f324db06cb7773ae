package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Diff compares a directory with a directory, a checkpoint with a
// directory, checkpoints of two unrelated sessions, and an empty side,
// with Save's rules (no .git, ignored or oversized files), and leaves
// both sides as they were.
func TestDiffBetweenDirectoriesAndCheckpoints(t *testing.T) {
	ctx := t.Context()
	scratch := t.TempDir()
	t.Setenv("TMPDIR", scratch) // where Diff's scratch repositories go
	s := &Store{Root: t.TempDir(), MaxFileSize: 1024}
	a, b := t.TempDir(), t.TempDir()
	if out, err := exec.Command("git", "init", "-q", a).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	write(t, a, "same.txt", "same\n")
	write(t, a, "edit.txt", "one\ntwo\n")
	write(t, a, "gone/old.txt", "old\n")
	write(t, a, ".gitignore", "build/\n")
	write(t, a, "build/x.o", "ignored in a")
	write(t, a, "big.dat", strings.Repeat("a", 2048))
	write(t, b, "same.txt", "same\n")
	write(t, b, "edit.txt", "one\nTWO\n")
	write(t, b, "new/deep.txt", "new\n")
	write(t, b, ".gitignore", "build/\n")
	write(t, b, "big.dat", strings.Repeat("b", 2048))
	beforeA, beforeB := tree(t, a), tree(t, b)

	want := []Change{{"edit.txt", Modified}, {"gone/old.txt", Deleted}, {"new/deep.txt", Added}}
	d, err := s.Diff(ctx, Side{Dir: a}, Side{Dir: b}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Files, want) {
		t.Fatalf("files:\n got %v\nwant %v", d.Files, want)
	}
	for _, line := range []string{"--- a/edit.txt", "+++ b/edit.txt", "-two", "+TWO", "+++ b/new/deep.txt", "--- a/gone/old.txt"} {
		if !strings.Contains(d.Patch, line+"\n") {
			t.Fatalf("patch lacks %q:\n%s", line, d.Patch)
		}
	}
	if strings.Contains(d.Patch, "big.dat") || strings.Contains(d.Patch, "build/") || d.Truncated {
		t.Fatalf("patch holds an oversized or ignored file, or was cut:\n%s", d.Patch)
	}
	if !equal(tree(t, a), beforeA) || !equal(tree(t, b), beforeB) {
		t.Fatal("Diff changed a side")
	}

	// Checkpoints of two unrelated sessions, and one against a directory.
	ida, err := s.Save(ctx, "sa", a, "a")
	if err != nil {
		t.Fatal(err)
	}
	idb, err := s.Save(ctx, "sb", b, "b")
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]Side{
		{{Session: "sa", ID: ida}, {Session: "sb", ID: idb}},
		{{Session: "sa", ID: ida}, {Dir: b}},
		{{Dir: a}, {Session: "sb", ID: idb}},
	} {
		d2, err := s.Diff(ctx, pair[0], pair[1], 0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(d2.Files, want) || d2.Patch != d.Patch {
			t.Fatalf("%v: files %v, patch:\n%s\nwant as between the directories", pair, d2.Files, d2.Patch)
		}
	}

	// Directories read from their sessions' snapshots see what changed
	// since: a file written after the checkpoint, one deleted.
	write(t, b, "later.txt", "later\n")
	if err := os.Remove(filepath.Join(a, "gone/old.txt")); err != nil {
		t.Fatal(err)
	}
	dl, err := s.Diff(ctx, Side{Dir: a, Session: "sa"}, Side{Dir: b, Session: "sb"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantLater := []Change{{"edit.txt", Modified}, {"later.txt", Added}, {"new/deep.txt", Added}}
	if !reflect.DeepEqual(dl.Files, wantLater) || !strings.Contains(dl.Patch, "+later\n") {
		t.Fatalf("from the snapshots: %v\n%s", dl.Files, dl.Patch)
	}
	os.Remove(filepath.Join(b, "later.txt"))
	write(t, a, "gone/old.txt", "old\n")

	// An empty side: everything the other holds is added.
	d3, err := s.Diff(ctx, Side{}, Side{Session: "sb", ID: idb}, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantAll := []Change{{".gitignore", Added}, {"edit.txt", Added}, {"new/deep.txt", Added}, {"same.txt", Added}}
	if !reflect.DeepEqual(d3.Files, wantAll) {
		t.Fatalf("from nothing: %v, want %v", d3.Files, wantAll)
	}

	// The limit cuts the patch at a line end.
	d4, err := s.Diff(ctx, Side{Dir: a}, Side{Dir: b}, 40)
	if err != nil {
		t.Fatal(err)
	}
	if !d4.Truncated || len(d4.Patch) > 40 || (d4.Patch != "" && !strings.HasSuffix(d4.Patch, "\n")) {
		t.Fatalf("cut patch %q truncated=%v", d4.Patch, d4.Truncated)
	}

	// A checkpoint the session does not hold is ErrNotFound.
	if _, err := s.Diff(ctx, Side{Session: "sa", ID: idb}, Side{Dir: b}, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("foreign checkpoint: %v", err)
	}
	if _, err := s.Diff(ctx, Side{Session: "nobody", ID: ida}, Side{Dir: b}, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("session without checkpoints: %v", err)
	}
	if _, err := s.Diff(ctx, Side{Dir: filepath.Join(a, "missing")}, Side{Dir: b}, 0); err == nil {
		t.Fatal("a missing directory compared")
	}
	if entries, err := os.ReadDir(scratch); err != nil || len(entries) != 0 {
		t.Fatalf("scratch repositories left behind: %v %v", entries, err)
	}
}

// Comparing two 1,000-file workspaces that differ in one file, each side
// its directory, with and without the sessions' shadow repositories to
// start from (report: go test -bench Diff ./checkpoint).
func BenchmarkDiffOfTwoWorkspaces(b *testing.B) {
	s := &Store{Root: b.TempDir()}
	a, c := b.TempDir(), b.TempDir()
	for i := range 1000 {
		content := strings.Repeat(fmt.Sprintf("line %d of a source file\n", i), 40)
		for _, dir := range []string{a, c} {
			p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%50), fmt.Sprintf("f%04d.go", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(c, "pkg00", "f0000.go"), []byte("changed\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, withRepos := range []bool{false, true} {
		sa, sc := Side{Dir: a}, Side{Dir: c}
		name := "directories"
		if withRepos {
			if _, err := s.Save(b.Context(), "sa", a, "a"); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Save(b.Context(), "sc", c, "c"); err != nil {
				b.Fatal(err)
			}
			sa.Session, sc.Session = "sa", "sc"
			name = "directories-with-checkpoints"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				d, err := s.Diff(b.Context(), sa, sc, 0)
				if err != nil || len(d.Files) != 1 {
					b.Fatalf("%v %v", d, err)
				}
			}
		})
	}
}
