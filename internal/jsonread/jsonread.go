// Package jsonread reads JSON text from its bytes, checking the syntax as
// it goes, for the readers that skip reflection: the tool-argument check
// that judges arguments without decoding them, and the OpenAI client's
// reader of whole replies. A Reader never decodes what its caller does not
// ask for and never allocates; any syntax error makes the method that
// meets it report false, and the caller then turns to encoding/json.
package jsonread

import "unicode/utf8"

// MaxDepth bounds the nesting of objects and arrays a Reader follows;
// deeper text is reported as not read (false), not recursed into.
const MaxDepth = 32

// MaxExactDigits is the most digits of an integer whose value a float64
// holds exactly, so that comparing it or storing it in an int is exact.
const MaxExactDigits = 15

// Reader reads one JSON text, B, from position I.
type Reader struct {
	B     []byte
	I     int
	depth int
}

// At returns the byte at the read position, 0 past the end.
func (r *Reader) At() byte {
	if r.I < len(r.B) {
		return r.B[r.I]
	}
	return 0
}

// Space passes over whitespace.
func (r *Reader) Space() {
	for r.I < len(r.B) {
		switch r.B[r.I] {
		case ' ', '\t', '\n', '\r':
			r.I++
		default:
			return
		}
	}
}

// AtEnd reports whether only whitespace is left.
func (r *Reader) AtEnd() bool {
	r.Space()
	return r.I == len(r.B)
}

// Literal consumes word (true, false or null) if it is there.
func (r *Reader) Literal(word string) bool {
	if len(r.B)-r.I < len(word) || string(r.B[r.I:r.I+len(word)]) != word {
		return false
	}
	r.I += len(word)
	return true
}

// String reads a string and returns its bytes between the quotes, and
// whether they hold an escape (so differ from the decoded string). Its
// bytes are not checked for UTF-8, as encoding/json does not refuse
// invalid UTF-8 (it replaces it when decoding).
func (r *Reader) String() (raw []byte, escaped, ok bool) {
	if r.At() != '"' {
		return nil, false, false
	}
	start := r.I + 1
	for i := start; i < len(r.B); i++ {
		if c := r.B[i]; c >= 0x20 && c != '"' && c != '\\' {
			continue // the common case: one test per byte
		}
		switch c := r.B[i]; {
		case c == '"':
			r.I = i + 1
			return r.B[start:i], escaped, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			if i+1 >= len(r.B) {
				return nil, false, false
			}
			switch r.B[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := hex4(r.B[i+2:]); !ok {
					return nil, false, false
				}
				i += 5
			default:
				return nil, false, false
			}
		}
	}
	return nil, false, false
}

// Unquote returns the string a String's bytes stand for, as
// json.Unmarshal decodes it, and false where it would not be the bytes'
// own text: invalid UTF-8 and escaped surrogates, which json.Unmarshal
// replaces or pairs up.
func Unquote(raw []byte, escaped bool) (string, bool) {
	if !escaped {
		return string(raw), utf8.Valid(raw)
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				return "", false
			}
			out = append(out, raw[i:i+n]...)
			i += n
			continue
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		i++ // String checked that an escape follows
		switch e := raw[i]; e {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := hex4(raw[i+1:])
			if r >= 0xD800 && r < 0xE000 {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			i += 4
		default: // " \ /
			out = append(out, e)
		}
		i++
	}
	return string(out), true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, h := range b[:4] {
		r <<= 4
		switch {
		case h >= '0' && h <= '9':
			r |= rune(h - '0')
		case h >= 'a' && h <= 'f':
			r |= rune(h - 'a' + 10)
		case h >= 'A' && h <= 'F':
			r |= rune(h - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Number is what Number read: the sign, the integer part's digits, and
// whether it was a plain integer (no fraction, no exponent).
type Number struct {
	Neg, Plain bool
	Int        []byte
}

// Exact returns the value of a plain integer of at most MaxExactDigits
// digits, and false for any other number (whose value a float64 or an
// int may not hold exactly).
func (n Number) Exact() (int64, bool) {
	if !n.Plain || len(n.Int) > MaxExactDigits {
		return 0, false
	}
	var v int64
	for _, c := range n.Int {
		v = v*10 + int64(c-'0')
	}
	if n.Neg {
		v = -v
	}
	return v, true
}

// Number reads a number.
func (r *Reader) Number() (Number, bool) {
	var n Number
	if n.Neg = r.At() == '-'; n.Neg {
		r.I++
	}
	start := r.I
	if d := r.digits(); d == 0 || (d > 1 && r.B[start] == '0') {
		return n, false
	}
	n.Int, n.Plain = r.B[start:r.I], true
	if r.At() == '.' {
		r.I++
		if r.digits() == 0 {
			return n, false
		}
		n.Plain = false
	}
	if c := r.At(); c == 'e' || c == 'E' {
		r.I++
		if c := r.At(); c == '+' || c == '-' {
			r.I++
		}
		if r.digits() == 0 {
			return n, false
		}
		n.Plain = false
	}
	return n, true
}

func (r *Reader) digits() int {
	start := r.I
	for r.I < len(r.B) && '0' <= r.B[r.I] && r.B[r.I] <= '9' {
		r.I++
	}
	return r.I - start
}

// Object reads an object, calling member for each member with its name's
// bytes (as String returns them), positioned at its value, which member
// must read.
func (r *Reader) Object(member func(name []byte, escaped bool) bool) bool {
	if r.At() != '{' {
		return false
	}
	_, ok := r.list('}', func() bool {
		name, escaped, ok := r.String()
		if !ok {
			return false
		}
		r.Space()
		if r.At() != ':' {
			return false
		}
		r.I++
		r.Space()
		return member(name, escaped)
	})
	return ok
}

// Array reads an array, calling elem positioned at each element, which
// elem must read; n is how many there were.
func (r *Reader) Array(elem func() bool) (n int, ok bool) {
	if r.At() != '[' {
		return 0, false
	}
	return r.list(']', elem)
}

// list reads an object's members or an array's elements, from the opening
// bracket to end, with one reading each.
func (r *Reader) list(end byte, one func() bool) (n int, ok bool) {
	if r.depth++; r.depth > MaxDepth {
		return 0, false
	}
	r.I++ // the opening bracket
	r.Space()
	if r.At() == end {
		r.I++
		r.depth--
		return 0, true
	}
	for {
		if !one() {
			return n, false
		}
		n++
		r.Space()
		switch r.At() {
		case ',':
			r.I++
			r.Space()
		case end:
			r.I++
			r.depth--
			return n, true
		default:
			return n, false
		}
	}
}

// Skip reads any value, checking it.
func (r *Reader) Skip() bool {
	switch r.At() {
	case '{':
		return r.Object(func([]byte, bool) bool { return r.Skip() })
	case '[':
		_, ok := r.Array(r.Skip)
		return ok
	case '"':
		_, _, ok := r.String()
		return ok
	case 't':
		return r.Literal("true")
	case 'f':
		return r.Literal("false")
	case 'n':
		return r.Literal("null")
	default:
		_, ok := r.Number()
		return ok
	}
}
