package tool

import (
	"unicode/utf8"

	"github.com/agentloop/agentloop/internal/jsonread"
)

// validObject reports whether raw is one JSON object that satisfies s,
// reading the bytes as they are: no value is decoded and nothing is
// allocated. Like valid, it only ever answers "valid": whatever it cannot
// judge exactly from the bytes alone — escapes in names or in strings that
// must be measured or compared, numbers that are not plain integers of at
// most 15 digits where the value matters, nesting deeper than
// jsonread.MaxDepth — makes it answer false, and the caller decodes the
// arguments and asks the full validator.
func (s *fastSchema) validObject(raw []byte) bool {
	p := rawScan{Reader: jsonread.Reader{B: raw}}
	p.Space()
	return p.At() == '{' && p.value(s) && p.AtEnd()
}

// rawScan reads one JSON text against a schema. Each method returns false
// on anything that is not valid JSON or does not satisfy its schema (nil:
// any value).
type rawScan struct{ jsonread.Reader }

func (p *rawScan) value(s *fastSchema) bool {
	switch p.At() {
	case '{':
		return p.object(s)
	case '[':
		return p.array(s)
	case '"':
		str, escaped, ok := p.String()
		return ok && s.admitsString(str, escaped)
	case 't':
		return p.Literal("true") && s.admitsLiteral(tBoolean, true)
	case 'f':
		return p.Literal("false") && s.admitsLiteral(tBoolean, false)
	case 'n':
		return p.Literal("null") && s.admitsLiteral(tNull, nil)
	default:
		return p.number(s)
	}
}

// number reads a number. Its value is known exactly only for a plain
// integer of at most jsonread.MaxExactDigits digits; any other number
// satisfies s only when s does not look at the value (no bound, no enum,
// and numbers that are not integers allowed).
func (p *rawScan) number(s *fastSchema) bool {
	num, ok := p.Number()
	if !ok || s == nil {
		return ok
	}
	n, exact := num.Exact()
	if !exact {
		return s.enum == nil && s.minimum == nil && s.maximum == nil && (s.types == tAny || s.types&tNumber != 0)
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

func (p *rawScan) object(s *fastSchema) bool {
	if s != nil && ((s.types != tAny && s.types&tObject == 0) || s.enum != nil || len(s.required) > 64) {
		return false
	}
	var seen uint64 // bit j: s.required[j] was seen
	ok := p.Object(func(name []byte, escaped bool) bool {
		if escaped {
			return false
		}
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
	n, ok := p.Array(func() bool { return p.value(items) })
	return ok && (s == nil || (n >= s.minItems && (s.maxItems < 0 || n <= s.maxItems)))
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
