package tokens

import "math"

// bpe counts tokens with byte-pair merge ranks and a pre-tokenizer.
type bpe struct {
	ranks map[string]int
	// piece returns the length of the pre-tokenized piece at s[i:].
	piece func(s string, i int) int
}

// Pieces up to smallPiece bytes (nearly all of them) are merged with
// tiktoken's simple quadratic loop; longer ones with a heap. maxPiece
// bounds the memory for one piece: a longer one (a megabyte of a repeated
// character in a tool output) is counted in maxPiece-byte parts, which can
// change the count by a token per part.
const (
	smallPiece = 128
	maxPiece   = 1 << 16
)

func (e *bpe) count(text string) int {
	n := 0
	for i := 0; i < len(text); {
		l := max(e.piece(text, i), 1)
		n += e.countPiece(text[i : i+l])
		i += l
	}
	return n
}

func (e *bpe) countPiece(p string) int {
	if _, ok := e.ranks[p]; ok {
		return 1
	}
	n := 0
	for len(p) > maxPiece {
		n += e.mergeLarge(p[:maxPiece])
		p = p[maxPiece:]
	}
	if len(p) > smallPiece {
		return n + e.mergeLarge(p)
	}
	return n + e.merge(p)
}

type part struct{ start, rank int }

// merge runs tiktoken's byte-pair merge on p and returns the number of
// tokens: repeatedly join the adjacent pair whose bytes have the lowest
// rank, until no adjacent pair is a known token.
func (e *bpe) merge(p string) int {
	if len(p) <= 1 {
		return len(p)
	}
	var buf [64]part
	parts := buf[:0]
	if len(p)+1 > len(buf) {
		parts = make([]part, 0, len(p)+1)
	}
	for i := 0; i <= len(p); i++ {
		parts = append(parts, part{i, math.MaxInt})
	}
	// rank of joining parts[i] and parts[i+1]
	rank := func(parts []part, i int) int {
		if i+2 < len(parts) {
			if r, ok := e.ranks[p[parts[i].start:parts[i+2].start]]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i+2 < len(parts); i++ {
		parts[i].rank = rank(parts, i)
	}
	for len(parts) > 2 {
		best, at := math.MaxInt, -1
		for i := 0; i+1 < len(parts); i++ {
			if parts[i].rank < best {
				best, at = parts[i].rank, i
			}
		}
		if at < 0 {
			break
		}
		parts = append(parts[:at+1], parts[at+2:]...)
		parts[at].rank = rank(parts, at)
		if at > 0 {
			parts[at-1].rank = rank(parts, at-1)
		}
	}
	return len(parts) - 1
}

// mergeLarge is merge in O(n log n): the parts form a linked list and the
// candidate pairs a min-heap ordered by rank, then position, which picks
// the same pair as merge's leftmost-lowest scan. A pair is re-pushed when
// one of its parts changes; stale entries are recognised by a version.
func (e *bpe) mergeLarge(p string) int {
	n := len(p)
	next := make([]int, n)   // start of the following part, or n
	prev := make([]int, n)   // start of the preceding part, or -1
	ver := make([]uint32, n) // bumped whenever the pair starting here changes
	dead := make([]bool, n)  // absorbed into the part on its left
	h := pairHeap(make([]pair, 0, n))
	for i := range n {
		next[i], prev[i] = i+1, i-1
		if i+2 <= n {
			if r, ok := e.ranks[p[i:i+2]]; ok {
				h = append(h, pair{rank: r, start: i})
			}
		}
	}
	h.init()
	parts := n
	for len(h) > 0 {
		top := h.pop()
		l := top.start
		if dead[l] || ver[l] != top.ver {
			continue
		}
		r := next[l]
		end := next[r]
		dead[r] = true
		next[l] = end
		if end < n {
			prev[end] = l
		}
		parts--
		ver[l]++
		if end < n {
			if rank, ok := e.ranks[p[l:next[end]]]; ok {
				h.push(pair{rank: rank, start: l, ver: ver[l]})
			}
		}
		if pl := prev[l]; pl >= 0 {
			ver[pl]++
			if rank, ok := e.ranks[p[pl:end]]; ok {
				h.push(pair{rank: rank, start: pl, ver: ver[pl]})
			}
		}
	}
	return parts
}

type pair struct {
	rank, start int
	ver         uint32
}

// pairHeap is a binary min-heap of pairs by (rank, start).
type pairHeap []pair

func (h pairHeap) less(i, j int) bool {
	return h[i].rank < h[j].rank || (h[i].rank == h[j].rank && h[i].start < h[j].start)
}

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(x pair) {
	*h = append(*h, x)
	for i := len(*h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		(*h)[i], (*h)[parent] = (*h)[parent], (*h)[i]
		i = parent
	}
}

func (h *pairHeap) pop() pair {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h pairHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
