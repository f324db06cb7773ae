package tool

import "unicode/utf8"

// validObject reports whether raw is one JSON object that satisfies s,
// reading the bytes as they are: no value is decoded and nothing is
// allocated. Like valid, it only ever answers "valid": whatever it cannot
// judge exactly from the bytes alone — escapes in names or in strings that
// must be measured or compared, numbers that are not plain integers of at
// most 15 digits where the value matters, nesting deeper than
// maxRawDepth — makes it answer false, and the caller decodes the
// arguments and asks the full validator.
func (s *fastSchema) validObject(raw []byte) bool {
	p := rawScan{b: raw}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' || !p.value(s) {
		return false
	}
	p.space()
	return p.i == len(p.b)
}

// maxRawDepth bounds the nesting validObject follows.
const maxRawDepth = 32

// maxExactDigits is the most digits of an integer whose value a float64
// holds exactly, so that comparing it to a bound or an enum is exact.
const maxExactDigits = 15

// rawScan reads one JSON text. Each method returns false on anything that
// is not valid JSON or does not satisfy its schema (nil: any value).
type rawScan struct {
	b     []byte
	i     int
	depth int
}

func (p *rawScan) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *rawScan) value(s *fastSchema) bool {
	if p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; c {
	case '{':
		return p.object(s)
	case '[':
		return p.array(s)
	case '"':
		str, escaped, ok := p.str()
		return ok && s.admitsString(str, escaped)
	case 't':
		return p.literal("true") && s.admitsLiteral(tBoolean, true)
	case 'f':
		return p.literal("false") && s.admitsLiteral(tBoolean, false)
	case 'n':
		return p.literal("null") && s.admitsLiteral(tNull, nil)
	default:
		return p.number(s)
	}
}

func (p *rawScan) literal(word string) bool {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return false
	}
	p.i += len(word)
	return true
}

// str reads a string and returns its bytes between the quotes, and whether
// they hold an escape (so differ from the decoded string).
func (p *rawScan) str() (s []byte, escaped, ok bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false, false
	}
	start := p.i + 1
	for i := start; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			p.i = i + 1
			return p.b[start:i], escaped, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			if i+1 >= len(p.b) {
				return nil, false, false
			}
			switch p.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 >= len(p.b) || !isHex(p.b[i+2]) || !isHex(p.b[i+3]) || !isHex(p.b[i+4]) || !isHex(p.b[i+5]) {
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

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number reads a number. Its value is known exactly only for a plain
// integer of at most maxExactDigits digits; any other number satisfies s
// only when s does not look at the value (no bound, no enum, and numbers
// that are not integers allowed).
func (p *rawScan) number(s *fastSchema) bool {
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	start := p.i
	digits := p.digits()
	if digits == 0 || (digits > 1 && p.b[start] == '0') {
		return false
	}
	plain := true
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return false
		}
		plain = false
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return false
		}
		plain = false
	}
	if s == nil {
		return true
	}
	if !plain || digits > maxExactDigits {
		return s.enum == nil && s.minimum == nil && s.maximum == nil && (s.types == tAny || s.types&tNumber != 0)
	}
	var n int64
	for _, c := range p.b[start : start+digits] {
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	f := float64(n)
	if s.types != tAny && s.types&(tNumber|tInteger) == 0 {
		return false
	}
	if s.enum != nil && !enumHasNumber(s.enum, f) {
		return false
	}
	return (s.minimum == nil || f >= *s.minimum) && (s.maximum == nil || f <= *s.maximum)
}

func (p *rawScan) digits() int {
	n := 0
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

func (p *rawScan) object(s *fastSchema) bool {
	if s != nil && ((s.types != tAny && s.types&tObject == 0) || s.enum != nil || len(s.required) > 64) {
		return false
	}
	var seen uint64 // bit j: s.required[j] was seen
	_, ok := p.list('}', func() bool {
		name, escaped, ok := p.str()
		if !ok || escaped {
			return false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		var ps *fastSchema // nil: any value
		if s != nil {
			var known bool
			ps, known = s.properties[string(name)]
			if !known && s.noExtra {
				return false
			}
			for j, r := range s.required {
				if r == string(name) {
					seen |= 1 << j
				}
			}
		}
		return p.value(ps)
	})
	return ok && (s == nil || seen == 1<<len(s.required)-1)
}

func (p *rawScan) array(s *fastSchema) bool {
	if s != nil && ((s.types != tAny && s.types&tArray == 0) || s.enum != nil) {
		return false
	}
	var items *fastSchema
	if s != nil {
		items = s.items
	}
	n, ok := p.list(']', func() bool { return p.value(items) })
	return ok && (s == nil || (n >= s.minItems && (s.maxItems < 0 || n <= s.maxItems)))
}

// list reads an object's members or an array's elements, from the opening
// bracket to end, with one reading each; n is how many there were.
func (p *rawScan) list(end byte, one func() bool) (n int, ok bool) {
	if p.depth++; p.depth > maxRawDepth {
		return 0, false
	}
	p.i++ // the opening bracket
	p.space()
	if p.i < len(p.b) && p.b[p.i] == end {
		p.i++
		p.depth--
		return 0, true
	}
	for {
		if !one() {
			return n, false
		}
		n++
		p.space()
		switch {
		case p.i < len(p.b) && p.b[p.i] == ',':
			p.i++
			p.space()
		case p.i < len(p.b) && p.b[p.i] == end:
			p.i++
			p.depth--
			return n, true
		default:
			return n, false
		}
	}
}

// admitsString reports whether s admits a string whose bytes between the
// quotes are raw; escaped strings are judged only where their decoded form
// does not matter.
func (s *fastSchema) admitsString(raw []byte, escaped bool) bool {
	if s == nil {
		return true
	}
	if s.types != tAny && s.types&tString == 0 {
		return false
	}
	if s.enum != nil && (escaped || !enumHasString(s.enum, raw)) {
		return false
	}
	if s.minLength > 0 || s.maxLength >= 0 {
		if escaped {
			return false
		}
		n := utf8.RuneCount(raw)
		if n < s.minLength || (s.maxLength >= 0 && n > s.maxLength) {
			return false
		}
	}
	return true
}

// admitsLiteral reports whether s admits true, false or null (v).
func (s *fastSchema) admitsLiteral(t typeSet, v any) bool {
	if s == nil {
		return true
	}
	return (s.types == tAny || s.types&t != 0) && (s.enum == nil || inEnum(s.enum, v))
}

// enumHasString and enumHasNumber are inEnum for a string's bytes and a
// number, without boxing them.
func enumHasString(enum []any, raw []byte) bool {
	for _, e := range enum {
		if s, ok := e.(string); ok && s == string(raw) {
			return true
		}
	}
	return false
}

func enumHasNumber(enum []any, f float64) bool {
	for _, e := range enum {
		if x, ok := e.(float64); ok && x == f {
			return true
		}
	}
	return false
}
