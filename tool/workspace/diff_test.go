package workspace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// withLines returns numbered(1, n) with some lines replaced.
func withLines(n int, repl map[int]string) string {
	lines := strings.SplitAfter(numbered(1, n), "\n")
	for i, l := range repl {
		lines[i-1] = l + "\n"
	}
	return strings.Join(lines, "")
}

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{name: "equal", old: "a\nb\n", new: "a\nb\n", want: ""},
		{
			name: "change in the middle keeps three lines of context",
			old:  numbered(1, 10),
			new:  withLines(10, map[int]string{5: "five"}),
			want: "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
		},
		{
			name: "changes six lines apart share a hunk",
			old:  numbered(1, 12),
			new:  withLines(12, map[int]string{2: "two", 9: "nine"}),
			want: "--- a/f\n+++ b/f\n@@ -1,12 +1,12 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n 7\n 8\n-9\n+nine\n 10\n 11\n 12\n",
		},
		{
			name: "changes seven lines apart get two hunks",
			old:  numbered(1, 13),
			new:  withLines(13, map[int]string{2: "two", 10: "ten"}),
			want: "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n 13\n",
		},
		{
			name: "new file",
			old:  "",
			new:  "x\ny\n",
			want: "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n",
		},
		{
			name: "emptied file",
			old:  "x\n",
			new:  "",
			want: "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-x\n",
		},
		{
			name: "newline added at end of file",
			old:  "a\nb",
			new:  "a\nb\n",
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
		},
		{
			name: "line appended to a file without final newline",
			old:  "a",
			new:  "a\nb",
			want: "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n-a\n\\ No newline at end of file\n+a\n+b\n\\ No newline at end of file\n",
		},
		{
			name: "insertion at the start",
			old:  "b\nc\n",
			new:  "a\nb\nc\n",
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n+a\n b\n c\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnifiedDiff("a/f", "b/f", tt.old, tt.new); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// lcs is the textbook dynamic program, to check that myers is minimal.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	for i := range a {
		cur := make([]int, len(b)+1)
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev = cur
	}
	return prev[len(b)]
}

// checkScript verifies that script turns a into b and returns its edit count.
func checkScript(t *testing.T, a, b []string, script []edit) int {
	t.Helper()
	var x, y, edits int
	for _, e := range script {
		if e.x != x || e.y != y {
			t.Fatalf("edit %c at (%d,%d), expected position (%d,%d)", e.kind, e.x, e.y, x, y)
		}
		switch e.kind {
		case ' ':
			if a[x] != b[y] {
				t.Fatalf("unchanged line %d/%d differs: %q vs %q", x, y, a[x], b[y])
			}
			x++
			y++
		case '-':
			x++
			edits++
		case '+':
			y++
			edits++
		}
	}
	if x != len(a) || y != len(b) {
		t.Fatalf("script ends at (%d,%d), want (%d,%d)", x, y, len(a), len(b))
	}
	return edits
}

func randomLines(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a'+r.IntN(4))) + "\n"
	}
	return out
}

func TestDiffLinesMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		a, b := randomLines(r, r.IntN(15)), randomLines(r, r.IntN(15))
		edits := checkScript(t, a, b, diffLines(a, b))
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Fatalf("diff of %q and %q: %d edits, shortest is %d", a, b, edits, want)
		}
	}
}

func TestDiffLinesTooDifferent(t *testing.T) {
	var a, b []string
	for i := 0; i < maxEditDistance; i++ {
		a = append(a, fmt.Sprintf("old %d\n", i))
		b = append(b, fmt.Sprintf("new %d\n", i))
	}
	a = append([]string{"same\n"}, a...)
	b = append([]string{"same\n"}, b...)
	if edits := checkScript(t, a, b, diffLines(a, b)); edits != 2*maxEditDistance {
		t.Fatalf("%d edits", edits)
	}
}

// TestUnifiedDiffApplies feeds our diffs to git apply and checks the result.
func TestUnifiedDiffApplies(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	for i := 0; i < 40; i++ {
		a := strings.Join(randomLines(r, 1+r.IntN(40)), "")
		b := strings.Join(randomLines(r, 1+r.IntN(40)), "")
		if r.IntN(3) == 0 {
			b = strings.TrimSuffix(b, "\n")
		}
		if r.IntN(3) == 0 {
			a = strings.TrimSuffix(a, "\n")
		}
		if err := os.WriteFile(file, []byte(a), 0o644); err != nil {
			t.Fatal(err)
		}
		patch := UnifiedDiff("a/f", "b/f", a, b)
		if patch == "" {
			continue
		}
		cmd := exec.Command("git", "apply", "--unidiff-zero", "-")
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(patch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply failed: %v\n%s\npatch:\n%s", err, out, patch)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != b {
			t.Fatalf("applying\n%s\nto %q gave %q, want %q", patch, a, got, b)
		}
	}
}
