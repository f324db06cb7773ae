package toolcall

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// litParser reads Python literals — and, being a superset, lenient JSON —
// and writes them out as JSON. It accepts single, double and triple quoted
// strings (raw control characters inside them are escaped), True/False/None
// as well as true/false/null, Python numbers (+1, .5, 1_000, 0x1f), tuples
// as arrays, trailing commas and bare identifier keys. It never backtracks,
// so one parse costs one pass over what it consumes.
type litParser struct {
	s     string
	i     int
	depth int
	out   []byte
	// trunc closes containers left open when the input ends after a
	// complete value (a reply cut off just before its closing braces).
	trunc bool
	ended bool // the input ended inside a container that trunc closed
	// lists and dicts count the containers open: a closer of an outer
	// container closes the inner ones left open ([{…}, {…] reads as
	// [{…}, {…}], as jsonExtent delimits it).
	lists, dicts int
}

const maxDepth = 200

// litError is formatted only when reported: a scan over many candidates
// fails cheaply.
type litError struct {
	off    int
	format string
	args   []any
}

func (e *litError) msg() string   { return fmt.Sprintf(e.format, e.args...) }
func (e *litError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg(), e.off) }

func (l *litParser) fail(format string, a ...any) error {
	return l.failAt(l.i, format, a...)
}

// failAt reports an error at off; l.i stays where scanning stopped, so
// callers can tell how much input was examined.
func (l *litParser) failAt(off int, format string, a ...any) error {
	return &litError{off: off, format: format, args: a}
}

func (l *litParser) eof() bool { return l.i >= len(l.s) }

func (l *litParser) ws() {
	for l.i < len(l.s) && isSpace(l.s[l.i]) {
		l.i++
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentByte(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func (l *litParser) ident() string {
	start := l.i
	for l.i < len(l.s) && isIdentByte(l.s[l.i]) {
		l.i++
	}
	return l.s[start:l.i]
}

// value parses one literal.
func (l *litParser) value() error {
	l.ws()
	if l.eof() {
		return l.fail("the input ends where a value should be")
	}
	switch c := l.s[l.i]; {
	case c == '{':
		return l.dict()
	case c == '[':
		return l.list(']')
	case c == '(':
		return l.list(')')
	case c == '"' || c == '\'':
		return l.str()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return l.number()
	case isIdentStart(c):
		start := l.i
		switch id := l.ident(); id {
		case "True", "true":
			l.out = append(l.out, "true"...)
		case "False", "false":
			l.out = append(l.out, "false"...)
		case "None", "null":
			l.out = append(l.out, "null"...)
		default:
			return l.failAt(start, "unexpected name %q where a value should be (quote strings)", truncate(id, 32))
		}
		return nil
	default:
		return l.fail("unexpected character %q where a value should be", c)
	}
}

func (l *litParser) enter() error {
	l.depth++
	if l.depth > maxDepth {
		return l.fail("values are nested more than %d deep", maxDepth)
	}
	return nil
}

// list parses [..] or (..) into a JSON array.
func (l *litParser) list(close byte) error {
	if err := l.enter(); err != nil {
		return err
	}
	l.lists++
	defer func() { l.depth--; l.lists-- }()
	l.i++
	l.out = append(l.out, '[')
	for first := true; ; first = false {
		l.ws()
		if !first && !l.eof() && l.s[l.i] == ',' {
			l.i++
			l.ws()
		} else if !l.eof() && l.s[l.i] == '}' && l.dicts > 0 && close == ']' {
			l.out = append(l.out, ']') // the enclosing dict's closer
			return nil
		} else if !first && !l.eof() && l.s[l.i] != close {
			return l.fail("expected ',' or '%c' after an array element, found %q", close, l.s[l.i])
		}
		if l.eof() {
			if l.trunc {
				l.ended = true
				l.out = append(l.out, ']')
				return nil
			}
			return l.fail("the input ends inside an array; close it with '%c'", close)
		}
		if l.s[l.i] == close {
			l.i++
			l.out = append(l.out, ']')
			return nil
		}
		if !first {
			l.out = append(l.out, ',')
		}
		if err := l.value(); err != nil {
			return err
		}
		if l.ended {
			l.out = append(l.out, ']')
			return nil
		}
	}
}

// dict parses {..} into a JSON object.
func (l *litParser) dict() error {
	if err := l.enter(); err != nil {
		return err
	}
	l.dicts++
	defer func() { l.depth--; l.dicts-- }()
	l.i++
	l.out = append(l.out, '{')
	for first := true; ; first = false {
		l.ws()
		if !first && !l.eof() && l.s[l.i] == ',' {
			l.i++
			l.ws()
		} else if !l.eof() && l.s[l.i] == ']' && l.lists > 0 {
			l.out = append(l.out, '}') // the enclosing list's closer
			return nil
		} else if !first && !l.eof() && l.s[l.i] != '}' {
			return l.fail("expected ',' or '}' after an object member, found %q", l.s[l.i])
		}
		if l.eof() {
			if l.trunc {
				l.ended = true
				l.out = append(l.out, '}')
				return nil
			}
			return l.fail("the input ends inside an object; close it with '}'")
		}
		if l.s[l.i] == '}' {
			l.i++
			l.out = append(l.out, '}')
			return nil
		}
		if !first {
			l.out = append(l.out, ',')
		}
		if err := l.key(); err != nil {
			return err
		}
		l.ws()
		if l.eof() || l.s[l.i] != ':' {
			return l.fail("expected ':' after an object key")
		}
		l.i++
		l.out = append(l.out, ':')
		if err := l.value(); err != nil {
			return err
		}
		if l.ended {
			l.out = append(l.out, '}')
			return nil
		}
	}
}

// key parses an object key: a string, a number or a bare name.
func (l *litParser) key() error {
	c := l.s[l.i]
	switch {
	case c == '"' || c == '\'':
		return l.str()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		start := len(l.out)
		if err := l.number(); err != nil {
			return err
		}
		num := string(l.out[start:])
		l.out = appendJSONString(l.out[:start], num)
		return nil
	case isIdentStart(c):
		l.out = appendJSONString(l.out, l.ident())
		return nil
	default:
		return l.fail("unexpected character %q where an object key should be", c)
	}
}

// number parses a JSON or Python number.
func (l *litParser) number() error {
	start := l.i
	if l.s[l.i] == '-' || l.s[l.i] == '+' {
		l.i++
	}
	for l.i < len(l.s) {
		c := l.s[l.i]
		if isIdentByte(c) || c == '.' || ((c == '+' || c == '-') && (l.s[l.i-1] == 'e' || l.s[l.i-1] == 'E')) {
			l.i++
			continue
		}
		break
	}
	tok := l.s[start:l.i]
	n, ok := pyNumber(tok)
	if !ok {
		return l.failAt(start, "%q is not a number", truncate(tok, 32))
	}
	l.out = append(l.out, n...)
	return nil
}

// str parses a quoted string (', ", ”' or """) into a JSON string.
func (l *litParser) str() error {
	q := l.s[l.i]
	triple := strings.HasPrefix(l.s[l.i:], string([]byte{q, q, q}))
	start := l.i
	if triple {
		l.i += 3
	} else {
		l.i++
	}
	l.out = append(l.out, '"')
	for {
		if l.eof() {
			return l.failAt(start, "a string is never closed")
		}
		c := l.s[l.i]
		switch {
		case c == q && (!triple || strings.HasPrefix(l.s[l.i:], string([]byte{q, q, q}))):
			if triple {
				l.i += 3
			} else {
				l.i++
			}
			l.out = append(l.out, '"')
			return nil
		case c == '\\':
			if err := l.escape(); err != nil {
				return err
			}
		case c < utf8.RuneSelf:
			l.out = appendJSONRune(l.out, rune(c))
			l.i++
		default:
			r, size := utf8.DecodeRuneInString(l.s[l.i:])
			l.out = appendJSONRune(l.out, r) // RuneError for invalid bytes
			l.i += size
		}
	}
}

// escape handles a backslash escape inside a string.
func (l *litParser) escape() error {
	if l.i+1 >= len(l.s) {
		l.i++
		return l.fail("a string ends in a lone backslash")
	}
	c := l.s[l.i+1]
	l.i += 2
	switch c {
	case 'n':
		l.out = append(l.out, '\\', 'n')
	case 't':
		l.out = append(l.out, '\\', 't')
	case 'r':
		l.out = append(l.out, '\\', 'r')
	case 'b':
		l.out = append(l.out, '\\', 'b')
	case 'f':
		l.out = append(l.out, '\\', 'f')
	case '0':
		l.out = append(l.out, `\u0000`...)
	case '\\', '"', '\'', '/':
		l.out = appendJSONRune(l.out, rune(c))
	case '\n':
		// line continuation
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if l.i+n > len(l.s) {
			return l.fail("a \\%c escape needs %d hex digits", c, n)
		}
		var r rune
		for _, h := range []byte(l.s[l.i : l.i+n]) {
			d := hexDigit(h)
			if d < 0 {
				return l.fail("a \\%c escape needs %d hex digits", c, n)
			}
			r = r<<4 | rune(d)
		}
		l.i += n
		if c == 'u' && r >= 0xD800 && r < 0xE000 {
			// keep surrogates as escapes so pairs still combine in JSON
			l.out = append(l.out, '\\', 'u')
			l.out = append(l.out, l.s[l.i-4:l.i]...)
			return nil
		}
		if !utf8.ValidRune(r) {
			r = utf8.RuneError
		}
		l.out = appendJSONRune(l.out, r)
	default:
		// Python keeps unknown escapes as written.
		l.out = append(l.out, '\\', '\\')
		l.i--
	}
	return nil
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// appendJSONRune appends r as it appears inside a JSON string.
func appendJSONRune(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch {
	case r == '"':
		return append(dst, '\\', '"')
	case r == '\\':
		return append(dst, '\\', '\\')
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	case r < 0x20:
		return append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
	}
	return utf8.AppendRune(dst, r)
}
