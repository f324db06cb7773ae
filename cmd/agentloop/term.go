package main

import (
	"io"
	"strings"
)

// safeText removes terminal control sequences from text that came from a
// model, a tool or a file before it is printed: escape sequences (CSI,
// OSC such as clipboard writes, and the rest), carriage returns that could
// overwrite a prompt, and other control characters. Newlines and tabs stay.
func safeText(s string) string {
	if !hasControl(s) {
		return s
	}
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == 0x1b || r == 0x9b || r == 0x9d:
			i = skipEscape(rs, i)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func hasControl(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return true
		}
	}
	return false
}

// skipEscape returns the index of the last rune of the escape sequence
// starting at i.
func skipEscape(rs []rune, i int) int {
	kind := rs[i]
	if kind == 0x1b {
		if i+1 >= len(rs) {
			return i
		}
		i++
		switch rs[i] {
		case '[':
			kind = 0x9b
		case ']', 'P', '_', '^':
			kind = 0x9d
		default:
			return i // a two-character escape
		}
	}
	for i++; i < len(rs); i++ {
		r := rs[i]
		if kind == 0x9b && r >= 0x40 && r <= 0x7e {
			return i // CSI final byte
		}
		if kind == 0x9d && (r == 0x07 || r == 0x9c || (r == 0x1b && i+1 < len(rs) && rs[i+1] == '\\')) {
			if r == 0x1b {
				i++
			}
			return i // string terminator
		}
	}
	return len(rs) - 1
}

// safeWriter passes text through safeText, for output made of what a
// session recorded (sessions show).
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, safeText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
