package toolcall

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Work accounting.
//
// Every loop that examines bytes of the input charges them to parser.work,
// and so do the library calls that scan (strings.Index, JSON decoding). The
// tests feed megabyte-sized pathological inputs and assert that the total
// stays within a constant factor of the input length, which fails the moment
// some path starts rescanning text it has already examined.

func (p *parser) charge(n int) { p.work += int64(n) }

// finder reports successive occurrences of a fixed needle. Asked with
// non-decreasing positions, it examines every byte of the text at most once
// (plus the needle length per hit), however often it is asked: a miss is
// remembered, so a thousand "<tool_call>" openers with no closer cost one
// scan for the closer, not a thousand.
type finder struct {
	p      *parser
	needle string
	from   int  // the cache describes the first occurrence at or after from
	at     int  // that occurrence, or -1 for none
	filled bool // cache valid
}

func (p *parser) finder(needle string) *finder { return &finder{p: p, needle: needle} }

// next returns the index of the first occurrence at or after pos, or -1.
func (f *finder) next(pos int) int {
	text := f.p.text
	if pos > len(text) {
		pos = len(text)
	}
	if f.filled && pos >= f.from && (f.at < 0 || f.at >= pos) {
		return f.at
	}
	i := strings.Index(text[pos:], f.needle)
	f.filled, f.from = true, pos
	if i < 0 {
		f.p.charge(len(text) - pos)
		f.at = -1
		return -1
	}
	f.p.charge(i + len(f.needle))
	f.at = pos + i
	return f.at
}

// before returns next(pos) when it lies before limit, else -1.
func (f *finder) before(pos, limit int) int {
	i := f.next(pos)
	if i < 0 || i >= limit {
		return -1
	}
	return i
}

// contains reports whether needle occurs in the text (one counted scan).
func (p *parser) contains(needle string) bool {
	i := strings.Index(p.text, needle)
	if i < 0 {
		p.charge(len(p.text))
		return false
	}
	p.charge(i + len(needle))
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the first non-space position in [pos, limit).
func (p *parser) skipSpace(pos, limit int) int {
	start := pos
	for pos < limit && isSpace(p.text[pos]) {
		pos++
	}
	p.charge(pos - start)
	return pos
}

// span is a half-open byte range of the text.
type span struct{ start, end int }

// joinPieces trims every piece, drops empty ones and joins the rest with a
// newline.
func joinPieces(pieces []string) string {
	var b strings.Builder
	for _, s := range pieces {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return b.String()
}

// without returns the text with the cut spans removed, as trimmed pieces
// joined by newlines. Spans must be sorted and may not overlap.
func (p *parser) without(cuts []span) string {
	cuts = slices.Clone(cuts)
	slices.SortStableFunc(cuts, func(a, b span) int { return a.start - b.start })
	pieces := make([]string, 0, len(cuts)+1)
	pos := 0
	for _, c := range cuts {
		if c.start < pos {
			c.start = pos
		}
		if c.end <= c.start {
			continue
		}
		pieces = append(pieces, p.text[pos:c.start])
		pos = c.end
	}
	pieces = append(pieces, p.text[pos:])
	p.charge(len(p.text))
	return joinPieces(pieces)
}

// validName reports whether s can be a tool name: non-empty, at most 256
// bytes of valid UTF-8 without spaces, control characters or quotes.
func validName(s string) bool {
	if s == "" || len(s) > 256 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '"' || r == '\'' || r == '<' || r == '>' || r == '`' {
			return false
		}
	}
	return true
}

// snippet quotes up to 24 bytes of s around off for an error message.
func snippet(s string, off int) string {
	if off < 0 {
		off = 0
	}
	if off > len(s) {
		off = len(s)
	}
	lo, hi := off-12, off+12
	if lo < 0 {
		lo = 0
	}
	if hi > len(s) {
		hi = len(s)
	}
	for lo > 0 && !utf8.RuneStart(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8.RuneStart(s[hi]) {
		hi++
	}
	return strings.ToValidUTF8(s[lo:hi], "\uFFFD")
}
