package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// repos lists the session IDs that have a shadow repository in s.
func repos(t *testing.T, s *Store) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(s.Root, "*.git"))
	var out []string
	for _, p := range m {
		out = append(out, filepath.Base(p[:len(p)-len(".git")]))
	}
	sort.Strings(out)
	return out
}

// A deleted session's repository stays while a living fork reads it,
// directly or down a chain, and goes with the last one; every living
// repository still exports the snapshots it inherits.
func TestReleaseKeepsWhatLivingForksRead(t *testing.T) {
	cases := []struct {
		name    string
		deletes []string // in order; the chain is a → b → c (b forks a, c forks b), plus d forked from a
		left    [][]string
	}{
		{"a leaf", []string{"c"}, [][]string{{"a", "b", "d"}}},
		{"the root, then its forks", []string{"a", "b", "d", "c"}, [][]string{{"a", "b", "c", "d"}, {"a", "b", "c", "d"}, {"a", "b", "c"}, nil}},
		{"the middle, then the leaf", []string{"b", "c"}, [][]string{{"a", "b", "c", "d"}, {"a", "d"}}},
		{"leaves first", []string{"c", "d", "b", "a"}, [][]string{{"a", "b", "d"}, {"a", "b"}, {"a"}, nil}},
		{"the root and the middle, then the leaf", []string{"a", "b", "d", "c"}, [][]string{{"a", "b", "c", "d"}, {"a", "b", "c", "d"}, {"a", "b", "c"}, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s := &Store{Root: t.TempDir()}
			ws := t.TempDir()
			write(t, ws, "f.txt", "a\n")
			first, err := s.Save(ctx, "a", ws, "a")
			if err != nil {
				t.Fatal(err)
			}
			last := map[string]string{"a": first}
			for _, f := range [][2]string{{"a", "b"}, {"b", "c"}, {"a", "d"}} {
				if err := s.Fork(ctx, f[0], f[1], last[f[0]]); err != nil {
					t.Fatal(err)
				}
				dir := filepath.Join(t.TempDir(), "ws")
				if err := s.Export(ctx, f[1], last[f[0]], dir); err != nil {
					t.Fatal(err)
				}
				write(t, dir, "f.txt", f[1]+"\n")
				if last[f[1]], err = s.Save(ctx, f[1], dir, f[1]); err != nil {
					t.Fatal(err)
				}
			}
			living := map[string]bool{"a": true, "b": true, "c": true, "d": true}
			for i, id := range tc.deletes {
				if err := s.Release(id); err != nil {
					t.Fatalf("release %s: %v", id, err)
				}
				delete(living, id)
				if got := repos(t, s); !slices.Equal(got, tc.left[i]) {
					t.Fatalf("after deleting %v: repositories %v, want %v", tc.deletes[:i+1], got, tc.left[i])
				}
				for id := range living {
					dir := filepath.Join(t.TempDir(), "ws")
					if err := s.Export(ctx, id, first, dir); err != nil {
						t.Fatalf("after deleting %v, %s cannot export the first snapshot: %v", tc.deletes[:i+1], id, err)
					}
					if err := s.Export(ctx, id, last[id], filepath.Join(t.TempDir(), "ws")); err != nil {
						t.Fatalf("after deleting %v, %s cannot export its own: %v", tc.deletes[:i+1], id, err)
					}
				}
			}
			if len(living) == 0 {
				left, _ := os.ReadDir(s.Root)
				for _, e := range left {
					if e.Name() != ".removal.lock" {
						t.Fatalf("left in the checkpoints directory: %s", e.Name())
					}
				}
			}
		})
	}
}

// A session given a deleted one's ID, while a fork keeps the deleted
// one's repository, writes into that repository: it is not removed when
// the fork goes.
func TestReleaseSparesAnIDInUseAgain(t *testing.T) {
	ctx := t.Context()
	s := &Store{Root: t.TempDir()}
	ws := t.TempDir()
	write(t, ws, "f.txt", "1\n")
	id, err := s.Save(ctx, "a", ws, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fork(ctx, "a", "b", id); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "f.txt", "2\n")
	again, err := s.Save(ctx, "a", ws, "a again")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release("b"); err != nil {
		t.Fatal(err)
	}
	if got := repos(t, s); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("repositories %v, want the reused a", got)
	}
	if err := s.Export(ctx, "a", again, filepath.Join(t.TempDir(), "ws")); err != nil {
		t.Fatal(err)
	}
}

// A sweep a kill cut short (the repository gone, its mark left) is
// finished by the next one; a session never checkpointed releases
// cleanly, even with no checkpoints directory.
func TestReleaseFinishesAnInterruptedSweep(t *testing.T) {
	ctx := t.Context()
	s := &Store{Root: t.TempDir()}
	ws := t.TempDir()
	write(t, ws, "f.txt", "1\n")
	if _, err := s.Save(ctx, "a", ws, "a"); err != nil {
		t.Fatal(err)
	}
	// As a kill in the middle of os.RemoveAll leaves it.
	if err := os.RemoveAll(filepath.Join(s.Root, "a.git", "objects")); err != nil {
		t.Fatal(err)
	}
	write(t, s.Root, "a.deleted", "a\n")
	if err := s.Release("never-checkpointed"); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(s.Root)
	for _, e := range left {
		if e.Name() != ".removal.lock" {
			t.Fatalf("left in the checkpoints directory: %s", e.Name())
		}
	}
	none := &Store{Root: filepath.Join(t.TempDir(), "missing")}
	if err := none.Release("x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(none.Root); !os.IsNotExist(err) {
		t.Fatalf("release made the checkpoints directory: %v", err)
	}
	if err := s.Release("../x"); err == nil {
		t.Fatal("release of an invalid id")
	}
}

// The cost of a delete's sweep among 200 repositories, half of them forks
// (each with an alternates file to read).
func BenchmarkReleaseAmong200Repositories(b *testing.B) {
	ctx := b.Context()
	s := &Store{Root: b.TempDir()}
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte("x\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		id := fmt.Sprintf("s%d", i)
		first, err := s.Save(ctx, id, ws, id)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Fork(ctx, id, id+"-fork", first); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		// A session never checkpointed: each sweep reads everything and
		// removes nothing.
		if err := s.Release(fmt.Sprintf("gone%d", i)); err != nil {
			b.Fatal(err)
		}
	}
}
