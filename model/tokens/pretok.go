package tokens

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written pre-tokenizers equivalent to tiktoken's split regexps, which
// the regexp2 engine runs at about 1 MB/s. Each function returns the length
// in bytes of the piece the regexp would match at s[i:], following its
// leftmost-first, backtracking semantics. The tests compare them with
// tiktoken-go's regexp2 implementation on random and fuzzed text.

// Character classes, as bits.
const (
	cLetter = 1 << iota // \p{L}
	cNumber             // \p{N}
	cSpace              // \s (regexp2 uses unicode.IsSpace)
	cUpper              // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k)
	cLower              // [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k)
	cNL                 // \r or \n
)

var asciiClass [utf8.RuneSelf]uint8

func init() {
	for r := range rune(utf8.RuneSelf) {
		asciiClass[r] = slowClass(r)
	}
}

func class(r rune) uint8 {
	if r >= 0 && r < utf8.RuneSelf {
		return asciiClass[r]
	}
	return slowClass(r)
}

func slowClass(r rune) uint8 {
	var c uint8
	if unicode.IsLetter(r) {
		c |= cLetter
	}
	if unicode.IsNumber(r) {
		c |= cNumber
	}
	if unicode.IsSpace(r) {
		c |= cSpace
	}
	if r == '\r' || r == '\n' {
		c |= cNL
	}
	mark := unicode.IsMark(r)
	both := mark || unicode.Is(unicode.Lm, r) || unicode.Is(unicode.Lo, r)
	if both || unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r) {
		c |= cUpper
	}
	if both || unicode.Is(unicode.Ll, r) {
		c |= cLower
	}
	return c
}

// at decodes the rune at s[i:]; at the end it returns class 0 and size 0.
func at(s string, i int) (c uint8, r rune, size int) {
	if i >= len(s) {
		return 0, -1, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], rune(b), 1
	}
	r, size = utf8.DecodeRuneInString(s[i:])
	return class(r), r, size
}

// run returns the end of the run of runes from i that have any of bits.
func run(s string, i int, bits uint8) int {
	for {
		c, _, n := at(s, i)
		if n == 0 || c&bits == 0 {
			return i
		}
		i += n
	}
}

// isPunct is [^\s\p{L}\p{N}].
func isPunct(c uint8, size int) bool { return size > 0 && c&(cSpace|cLetter|cNumber) == 0 }

// isPrefix is [^\r\n\p{L}\p{N}].
func isPrefix(c uint8, size int) bool { return size > 0 && c&(cNL|cLetter|cNumber) == 0 }

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i:].
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' {
		return 0
	}
	_, r1, n1 := at(s, i+1)
	switch unicode.ToLower(r1) {
	case 's', 't', 'm', 'd':
		return 1 + n1
	case 'r', 'v', 'l':
		want := 'e'
		if unicode.ToLower(r1) == 'l' {
			want = 'l'
		}
		if _, r2, n2 := at(s, i+1+n1); n2 > 0 && unicode.ToLower(r2) == want {
			return 1 + n1 + n2
		}
	}
	return 0
}

// numbers matches \p{N}{1,3}.
func numbers(s string, i int) int {
	j := i
	for range 3 {
		c, _, n := at(s, j)
		if n == 0 || c&cNumber == 0 {
			break
		}
		j += n
	}
	return j - i
}

// whitespace matches \s*[\r\n]+|\s+(?!\S)|\s+ at s[i:], where s[i] is a
// space.
func whitespace(s string, i int) int {
	j, lastNL, lastStart := i, -1, i
	for {
		c, _, n := at(s, j)
		if n == 0 || c&cSpace == 0 {
			break
		}
		if c&cNL != 0 {
			lastNL = j + n
		}
		lastStart = j
		j += n
	}
	switch {
	case lastNL > 0: // \s*[\r\n]+ ends after the run's last newline
		return lastNL - i
	case j == len(s) || lastStart == i: // \s+(?!\S) at the end, or a lone \s+
		return j - i
	default: // \s+(?!\S) leaves the last space to start the next piece
		return lastStart - i
	}
}

// pieceCL100K is the match of
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func pieceCL100K(s string, i int) int {
	c, _, n := at(s, i)
	if n := contraction(s, i); n > 0 {
		return n
	}
	if c&cLetter != 0 {
		return run(s, i, cLetter) - i
	}
	if isPrefix(c, n) {
		if c2, _, n2 := at(s, i+n); n2 > 0 && c2&cLetter != 0 {
			return run(s, i+n, cLetter) - i
		}
	}
	if c&cNumber != 0 {
		return numbers(s, i)
	}
	if j := punct(s, i, c, n); j > i {
		return run(s, j, cNL) - i
	}
	return whitespace(s, i)
}

// punct matches " ?[^\s\p{L}\p{N}]+" and returns its end, or i.
func punct(s string, i int, c uint8, n int) int {
	j := i
	if s[i] == ' ' {
		j++
		c, _, n = at(s, j)
	}
	if !isPunct(c, n) {
		return i
	}
	for {
		c, _, n := at(s, j)
		if !isPunct(c, n) {
			return j
		}
		j += n
	}
}

// pieceO200K is the match of
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func pieceO200K(s string, i int) int {
	c, _, n := at(s, i)
	prefixed := isPrefix(c, n)
	// The first alternative, with the optional prefix taken, then not.
	if prefixed {
		if j := upperLower(s, i+n); j > 0 {
			return j - i
		}
	}
	if j := upperLower(s, i); j > 0 {
		return j - i
	}
	// The second alternative likewise.
	if prefixed {
		if j := upperThenLower(s, i+n); j > 0 {
			return j - i
		}
	}
	if j := upperThenLower(s, i); j > 0 {
		return j - i
	}
	if c&cNumber != 0 {
		return numbers(s, i)
	}
	if j := punct(s, i, c, n); j > i {
		for {
			c, r, n := at(s, j)
			if n == 0 || (c&cNL == 0 && r != '/') {
				return j - i
			}
			j += n
		}
	}
	return whitespace(s, i)
}

// upperLower matches U*W+C? at s[start:] (U, W: the o200k upper and lower
// classes, which overlap; C: a contraction) and returns its end, or 0. U*
// is greedy and gives runes back until W+ can match.
func upperLower(s string, start int) int {
	e := run(s, start, cUpper)
	for k := e; k >= start; {
		if c, _, n := at(s, k); n > 0 && c&cLower != 0 {
			m := run(s, k, cLower)
			return m + contraction(s, m)
		}
		if k == start {
			break
		}
		_, size := utf8.DecodeLastRuneInString(s[:k])
		k -= size
	}
	return 0
}

// upperThenLower matches U+W*C? at s[start:] and returns its end, or 0.
func upperThenLower(s string, start int) int {
	e := run(s, start, cUpper)
	if e == start {
		return 0
	}
	m := run(s, e, cLower)
	return m + contraction(s, m)
}
