package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Forks of forks, deeper than git follows alternates (five), still read
// every snapshot they inherit: each fork lists all the repositories it
// reads from directly.
func TestForksOfForksReadTheirSnapshots(t *testing.T) {
	ctx := t.Context()
	s := &Store{Root: t.TempDir()}
	ws := t.TempDir()
	write(t, ws, "a.txt", "s0\n")
	first, err := s.Save(ctx, "s0", ws, "s0")
	if err != nil {
		t.Fatal(err)
	}
	prev, last := "s0", first
	for i := 1; i <= 8; i++ {
		next := fmt.Sprintf("s%d", i)
		if err := s.Fork(ctx, prev, next, last); err != nil {
			t.Fatalf("fork %d deep: %v", i, err)
		}
		dir := filepath.Join(t.TempDir(), "ws")
		if err := s.Export(ctx, next, first, dir); err != nil {
			t.Fatalf("fork %d deep: the first snapshot: %v", i, err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "s0\n" {
			t.Fatalf("fork %d deep exports %q", i, b)
		}
		write(t, dir, "a.txt", next+"\n")
		if last, err = s.Save(ctx, next, dir, next); err != nil {
			t.Fatalf("fork %d deep: save: %v", i, err)
		}
		prev = next
	}
	d, err := s.Diff(ctx, Side{Session: "s0", ID: first}, Side{Session: "s8", ID: last}, 0)
	if err != nil || len(d.Files) != 1 || d.Files[0] != (Change{"a.txt", Modified}) {
		t.Fatalf("diff from the first to the deepest: %+v %v", d, err)
	}
}
