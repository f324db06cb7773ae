package workspace

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// maxEditDistance bounds the Myers search. Past it the remaining middle of
// the files is shown as deleted and re-added: still a correct diff, only not
// a minimal one, and the search stays within O((N+M)·D) time and O(D²) memory.
const maxEditDistance = 1000

// edit is one line of an edit script: an unchanged line (' '), a line only in
// the old text ('-') or only in the new one ('+'). x and y are the numbers of
// old and new lines before it.
type edit struct {
	kind byte
	x, y int
}

// UnifiedDiff returns a unified diff (---/+++ headers, @@ hunks with three
// lines of context) turning oldText into newText, or "" when they are equal.
// A last line without a trailing newline is marked the way diff and git do.
func UnifiedDiff(oldName, newName, oldText, newText string) string {
	if oldText == newText {
		return ""
	}
	a, b := splitLines(oldText), splitLines(newText)
	script := diffLines(a, b)

	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	for i := 0; i < len(script); {
		for i < len(script) && script[i].kind == ' ' {
			i++
		}
		if i == len(script) {
			break
		}
		// A hunk runs from context before the first change to context after
		// the last change that is at most 2·context unchanged lines from the
		// previous one.
		start := max(i-diffContext, 0)
		last := i
		for j := i; j < len(script); j++ {
			if script[j].kind != ' ' {
				last = j
			} else if j-last > 2*diffContext {
				break
			}
		}
		end := min(last+diffContext+1, len(script))
		writeHunk(&out, script[start:end], a, b)
		i = end
	}
	return out.String()
}

func writeHunk(out *strings.Builder, h []edit, a, b []string) {
	var na, nb int
	for _, e := range h {
		if e.kind != '+' {
			na++
		}
		if e.kind != '-' {
			nb++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(h[0].x, na), hunkRange(h[0].y, nb))
	for _, e := range h {
		var line string
		switch e.kind {
		case '+':
			line = b[e.y]
		default:
			line = a[e.x]
		}
		out.WriteByte(e.kind)
		out.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats a hunk's line range the way GNU diff does: "l,n", just
// "l" for one line, and for an empty range the line before it.
func hunkRange(before, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprintf("%d", before+1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

// splitLines splits s into lines that keep their "\n"; only the last may
// lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines returns an edit script turning a into b: the common prefix and
// suffix as they are, and a shortest edit script (Myers) for the middle.
func diffLines(a, b []string) []edit {
	// Compare small integers instead of strings.
	ids := make(map[string]int, len(a)+len(b))
	intern := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	ai, bi := intern(a), intern(b)

	pre := 0
	for pre < len(ai) && pre < len(bi) && ai[pre] == bi[pre] {
		pre++
	}
	suf := 0
	for suf < len(ai)-pre && suf < len(bi)-pre && ai[len(ai)-1-suf] == bi[len(bi)-1-suf] {
		suf++
	}

	script := make([]edit, 0, len(a)+len(b))
	for i := 0; i < pre; i++ {
		script = append(script, edit{' ', i, i})
	}
	for _, e := range myers(ai[pre:len(ai)-suf], bi[pre:len(bi)-suf]) {
		script = append(script, edit{e.kind, e.x + pre, e.y + pre})
	}
	for i := 0; i < suf; i++ {
		script = append(script, edit{' ', len(a) - suf + i, len(b) - suf + i})
	}
	return script
}

// myers returns a shortest edit script from a to b (E. Myers, "An O(ND)
// Difference Algorithm and Its Variations", 1986), or a delete-all/insert-all
// script when more than maxEditDistance edits are needed.
func myers(a, b []int) []edit {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return nil
	}
	limit := min(n+m, maxEditDistance)
	off := limit + 1
	v := make([]int, 2*limit+3) // v[k+off]: furthest x on diagonal k
	// trace[d] holds v for diagonals -d..d after step d, at index k+d.
	var trace [][]int
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[k-1+off] < v[k+1+off]) {
				x = v[k+1+off] // down: insert b[y]
			} else {
				x = v[k-1+off] + 1 // right: delete a[x]
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[k+off] = x
			if x >= n && y >= m {
				return backtrack(trace, d, n, m)
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	// Too different: replace the whole middle.
	script := make([]edit, 0, n+m)
	for x := 0; x < n; x++ {
		script = append(script, edit{'-', x, 0})
	}
	for y := 0; y < m; y++ {
		script = append(script, edit{'+', n, y})
	}
	return script
}

// backtrack walks the trace from (n, m) at distance d back to (0, 0).
func backtrack(trace [][]int, d, n, m int) []edit {
	var rev []edit
	x, y := n, m
	for ; d > 0; d-- {
		prev := trace[d-1] // diagonals -(d-1)..d-1 at index k+d-1
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		// The edit moves from (px, py) one step down (insert) or right
		// (delete); a diagonal snake of unchanged lines leads on to (x, y).
		mx := px
		if pk == k-1 {
			mx = px + 1
		}
		for x > mx {
			x--
			y--
			rev = append(rev, edit{' ', x, y})
		}
		if pk == k+1 {
			rev = append(rev, edit{'+', px, py})
		} else {
			rev = append(rev, edit{'-', px, py})
		}
		x, y = px, py
	}
	for x > 0 {
		x--
		y--
		rev = append(rev, edit{' ', x, y})
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
