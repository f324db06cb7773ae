package openai

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeWhole fills w, which must be zero, from doc, a whole
// chat.completion, exactly as json.Unmarshal would — for the replies
// servers send — and reports false for anything it does not decode that
// way itself: invalid JSON, a value of another type than the field's,
// an integer that is not a plain one of at most 15 digits, an escaped
// surrogate or invalid UTF-8 in a string, a key written in another case
// (or with escapes or non-ASCII letters) that json.Unmarshal might still
// match to a field, a key given twice, unknown values nested deeper than
// maxSkipDepth. The caller then resets w and decodes doc with
// encoding/json, which also words the error.
//
// It is a reader of this one shape that checks the syntax as it reads,
// with no reflection: a short tool-call reply is decoded in 0.7 µs
// instead of 4.2 (BenchmarkDecodeWhole), with fewer allocations, and in
// small stack frames — json.Unmarshal's recursion through a reply's six
// levels of nesting is what grew a session's stack past 8 KiB at every
// model call, and a session waiting for its next reply 6.6 KiB deep could
// not shrink it back (see bench/README.md).
func decodeWhole(doc []byte, w *wholeReply) bool {
	p := wholeParser{b: doc}
	p.space()
	return p.object(topFields, func(k int) bool {
		switch k {
		case 0:
			return p.str(&w.Model)
		case 1:
			return p.choices(w)
		case 2:
			if p.null() {
				return true
			}
			w.Usage = new(wireUsage)
			return p.usage(w.Usage)
		default:
			var ok bool
			w.Error, ok = p.raw()
			return ok
		}
	}) && p.atEnd()
}

// The fields of each object, in the order decodeWhole's switches number
// them.
var (
	topFields      = []string{"model", "choices", "usage", "error"}
	choiceFields   = []string{"message", "finish_reason", "index"}
	messageFields  = []string{"content", "tool_calls", "reasoning_content", "reasoning", "refusal"}
	callFields     = []string{"id", "type", "function", "extra_content"}
	functionFields = []string{"name", "arguments"}
	usageFields    = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}
	cachedFields   = []string{"cached_tokens"}
	reasonFields   = []string{"reasoning_tokens"}
)

// wholeParser reads a document and checks its syntax as it goes: any
// syntax error makes a method report false, as does a value of a shape it
// does not decode.
type wholeParser struct {
	b []byte
	i int
}

// at returns the byte at the read position, 0 past the end.
func (p *wholeParser) at() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *wholeParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// atEnd reports whether only whitespace is left.
func (p *wholeParser) atEnd() bool {
	p.space()
	return p.i == len(p.b)
}

// expect consumes c, after any whitespace.
func (p *wholeParser) expect(c byte) bool {
	p.space()
	if p.at() != c {
		return false
	}
	p.i++
	p.space()
	return true
}

// object reads an object whose keys are among fields, calling member with
// the index of each key found, positioned at its value; unknown keys are
// skipped. It reports false on anything but an object, on a key given
// twice, and on a key json.Unmarshal might match to a field without it
// being written exactly so.
func (p *wholeParser) object(fields []string, member func(k int) bool) bool {
	if p.at() != '{' {
		return false
	}
	p.i++
	p.space()
	if p.at() == '}' {
		p.i++
		return true
	}
	var seen uint32
	for {
		key, ok := p.key()
		if !ok || !p.expect(':') {
			return false
		}
		k := -1
		for j, f := range fields {
			if string(key) == f {
				k = j
				break
			}
			if foldEqual(key, f) {
				return false // json.Unmarshal matches keys regardless of case
			}
		}
		switch {
		case k < 0:
			ok = p.skip(0)
		case seen&(1<<k) != 0:
			return false
		default:
			seen |= 1 << k
			ok = member(k)
		}
		if !ok {
			return false
		}
		p.space()
		switch p.at() {
		case '}':
			p.i++
			return true
		case ',':
			p.i++
			p.space()
		default:
			return false
		}
	}
}

// key reads an object key made of plain ASCII, the only ones compared.
func (p *wholeParser) key() ([]byte, bool) {
	if p.at() != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], true
		case c == '\\' || c < ' ' || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// foldEqual reports whether the ASCII key equals name but for case.
func foldEqual(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range len(key) {
		a, b := key[i], name[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// literal consumes the literal word (true, false or null) if it is there.
func (p *wholeParser) literal(word string) bool {
	if len(p.b)-p.i >= len(word) && string(p.b[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

// null consumes a null and reports whether there was one.
func (p *wholeParser) null() bool { return p.literal("null") }

// str reads a string into *s; null leaves *s alone, as json.Unmarshal does.
func (p *wholeParser) str(s *string) bool {
	if p.null() {
		return true
	}
	v, ok := p.text()
	if ok {
		*s = v
	}
	return ok
}

// optStr reads a string or null into *s.
func (p *wholeParser) optStr(s **string) bool {
	if p.null() {
		*s = nil
		return true
	}
	v, ok := p.text()
	if ok {
		*s = &v
	}
	return ok
}

// text reads a string value, unescaping it. An escaped surrogate and
// invalid UTF-8 (which json.Unmarshal replaces) are not decoded here.
func (p *wholeParser) text() (string, bool) {
	if p.at() != '"' {
		return "", false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return string(p.b[start:j]), true
		case c == '\\' || c < ' ' || c >= utf8.RuneSelf:
			return p.escaped(start)
		}
	}
	return "", false
}

// escaped reads the string that began at start, the slow way.
func (p *wholeParser) escaped(start int) (string, bool) {
	out := make([]byte, 0, 64)
	for j := start; j < len(p.b); {
		c := p.b[j]
		switch {
		case c == '"':
			p.i = j + 1
			return string(out), true
		case c < ' ':
			return "", false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(p.b[j:])
			if r == utf8.RuneError && n <= 1 {
				return "", false
			}
			out = append(out, p.b[j:j+n]...)
			j += n
			continue
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(p.b) {
			return "", false
		}
		j++
		switch e := p.b[j]; e {
		case '"', '\\', '/':
			out = append(out, e)
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
			r, ok := hex4(p.b[j+1:])
			if !ok || (r >= 0xD800 && r < 0xE000) {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			j += 4
		default:
			return "", false
		}
		j++
	}
	return "", false
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

// integer reads a plain integer of at most 15 digits into *n; null leaves
// *n alone.
func (p *wholeParser) integer(n *int) bool {
	if p.null() {
		return true
	}
	j, neg := p.i, false
	if j < len(p.b) && p.b[j] == '-' {
		neg = true
		j++
	}
	v, first := 0, j
	for ; j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9'; j++ {
		v = v*10 + int(p.b[j]-'0')
	}
	digits := j - first
	if digits == 0 || digits > 15 || (digits > 1 && p.b[first] == '0') || (j < len(p.b) && (p.b[j] == '.' || p.b[j] == 'e' || p.b[j] == 'E')) {
		return false
	}
	if neg {
		v = -v
	}
	*n, p.i = v, j
	return true
}

// number consumes a JSON number.
func (p *wholeParser) number() bool {
	j := p.i
	digits := func() int {
		from := j
		for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
			j++
		}
		return j - from
	}
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	if n := digits(); n == 0 || (n > 1 && p.b[j-n] == '0') {
		return false
	}
	if j < len(p.b) && p.b[j] == '.' {
		j++
		if digits() == 0 {
			return false
		}
	}
	if j < len(p.b) && (p.b[j] == 'e' || p.b[j] == 'E') {
		j++
		if j < len(p.b) && (p.b[j] == '+' || p.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false
		}
	}
	p.i = j
	return true
}

// raw returns a copy of the value's bytes, as json.RawMessage keeps them.
func (p *wholeParser) raw() (json.RawMessage, bool) {
	start := p.i
	if !p.skip(0) {
		return nil, false
	}
	return append(json.RawMessage(nil), p.b[start:p.i]...), true
}

// maxSkipDepth bounds the nesting of the values skipped (unknown fields):
// deeper ones are left to encoding/json rather than recursed into.
const maxSkipDepth = 32

// skip passes over one value, checking it, and stops right after it.
func (p *wholeParser) skip(depth int) bool {
	switch c := p.at(); {
	case c == '"':
		return p.skipString()
	case c == '{' || c == '[':
		if depth == maxSkipDepth {
			return false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		p.i++
		p.space()
		if p.at() == end {
			p.i++
			return true
		}
		for {
			if c == '{' && (!p.skipString() || !p.expect(':')) {
				return false
			}
			if !p.skip(depth + 1) {
				return false
			}
			p.space()
			switch p.at() {
			case end:
				p.i++
				return true
			case ',':
				p.i++
				p.space()
			default:
				return false
			}
		}
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	default:
		return p.number()
	}
}

// skipString passes over a string, checking it as text does, without
// unescaping it.
func (p *wholeParser) skipString() bool {
	if p.at() != '"' {
		return false
	}
	for j := p.i + 1; j < len(p.b); {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return true
		case c < ' ':
			return false
		case c == '\\':
			if j+1 >= len(p.b) {
				return false
			}
			switch p.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if _, ok := hex4(p.b[j+2:]); !ok {
					return false
				}
				j += 6
			default:
				return false
			}
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(p.b[j:])
			if r == utf8.RuneError && n <= 1 {
				return false
			}
			j += n
		default:
			j++
		}
	}
	return false
}

// array reads an array (or null, leaving it nil), calling elem for each
// element, positioned at it.
func (p *wholeParser) array(elem func() bool) (isNull, ok bool) {
	if p.null() {
		return true, true
	}
	if p.at() != '[' {
		return false, false
	}
	p.i++
	p.space()
	if p.at() == ']' {
		p.i++
		return false, true
	}
	for {
		if !elem() {
			return false, false
		}
		p.space()
		switch p.at() {
		case ']':
			p.i++
			return false, true
		case ',':
			p.i++
			p.space()
		default:
			return false, false
		}
	}
}

// objectList reads an array of objects, or null, into a new slice: each
// element is read by object with fields and member, a null one left zero.
func objectList[T any](p *wholeParser, fields []string, member func(v *T, k int) bool) (list []T, isNull, ok bool) {
	list = make([]T, 0, 1)
	isNull, ok = p.array(func() bool {
		list = append(list, *new(T))
		v := &list[len(list)-1]
		if p.null() {
			return true
		}
		return p.object(fields, func(k int) bool { return member(v, k) })
	})
	return list, isNull, ok
}

func (p *wholeParser) choices(w *wholeReply) bool {
	list, isNull, ok := objectList(p, choiceFields, func(c *wholeChoice, k int) bool {
		switch k {
		case 0:
			if p.null() {
				return true
			}
			m := &c.Message
			return p.object(messageFields, func(k int) bool {
				switch k {
				case 0:
					return p.optStr(&m.Content)
				case 1:
					return p.toolCalls(&m.ToolCalls)
				case 2:
					return p.str(&m.ReasoningContent)
				case 3:
					return p.str(&m.Reasoning)
				default:
					return p.optStr(&m.Refusal)
				}
			})
		case 1:
			return p.str(&c.FinishReason)
		default:
			return p.integer(&c.Index)
		}
	})
	if ok && !isNull {
		w.Choices = list
	}
	return ok
}

// toolCalls reads tool_calls into *calls, which is nil (a key is read once).
func (p *wholeParser) toolCalls(calls *[]wireToolCall) bool {
	list, isNull, ok := objectList(p, callFields, func(tc *wireToolCall, k int) bool {
		switch k {
		case 0:
			return p.str(&tc.ID)
		case 1:
			return p.str(&tc.Type)
		case 2:
			if p.null() {
				return true
			}
			return p.object(functionFields, func(k int) bool {
				if k == 0 {
					return p.str(&tc.Function.Name)
				}
				return p.str(&tc.Function.Arguments)
			})
		default:
			var ok bool
			tc.ExtraContent, ok = p.raw()
			return ok
		}
	})
	if ok && !isNull {
		*calls = list
	}
	return ok
}

func (p *wholeParser) usage(u *wireUsage) bool {
	return p.object(usageFields, func(k int) bool {
		switch k {
		case 0:
			return p.integer(&u.PromptTokens)
		case 1:
			return p.integer(&u.CompletionTokens)
		case 2:
			return p.integer(&u.TotalTokens)
		case 3:
			if p.null() {
				u.PromptTokensDetails = nil
				return true
			}
			u.PromptTokensDetails = new(promptDetails)
			return p.object(cachedFields, func(int) bool { return p.integer(&u.PromptTokensDetails.CachedTokens) })
		default:
			if p.null() {
				u.CompletionTokensDetails = nil
				return true
			}
			u.CompletionTokensDetails = new(completionDetails)
			return p.object(reasonFields, func(int) bool { return p.integer(&u.CompletionTokensDetails.ReasoningTokens) })
		}
	})
}
