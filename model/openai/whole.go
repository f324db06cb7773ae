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
// match to a field, a key given twice. The caller then resets w and
// decodes doc with encoding/json, which also words the error.
//
// It is a reader of this one shape, with no reflection: a reply is
// decoded several times faster, with a fraction of the allocations, and
// in small stack frames — json.Unmarshal's recursion through a reply's
// six levels of nesting is what grew a session's stack past 8 KiB at
// every model call (see bench/README.md).
func decodeWhole(doc []byte, w *wholeReply) bool {
	if !json.Valid(doc) {
		return false
	}
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
			w.Error = p.raw()
			return true
		}
	}) && p.i == len(p.b)
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

// wholeParser reads a document json.Valid accepted: its methods never
// meet a syntax error, only values of a shape they do not decode.
type wholeParser struct {
	b []byte
	i int
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

// object reads an object whose keys are among fields, calling member with
// the index of each key found, positioned at its value; unknown keys are
// skipped. It reports false on anything but an object, on a key given
// twice, and on a key json.Unmarshal might match to a field without it
// being written exactly so.
func (p *wholeParser) object(fields []string, member func(k int) bool) bool {
	if p.b[p.i] != '{' {
		return false
	}
	p.i++
	var seen uint32
	for {
		p.space()
		if p.b[p.i] == '}' {
			p.i++
			p.space()
			return true
		}
		if p.b[p.i] == ',' {
			p.i++
			p.space()
		}
		key, ok := p.key()
		if !ok {
			return false
		}
		p.space()
		p.i++ // the colon
		p.space()
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
		if k < 0 {
			p.skip()
		} else {
			if seen&(1<<k) != 0 {
				return false
			}
			seen |= 1 << k
			if !member(k) {
				return false
			}
		}
		p.space()
	}
}

// key reads an object key made of plain ASCII, the only ones compared.
func (p *wholeParser) key() ([]byte, bool) {
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], true
		case c == '\\' || c >= utf8.RuneSelf:
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

// null consumes a null and reports whether there was one.
func (p *wholeParser) null() bool {
	if p.b[p.i] == 'n' {
		p.i += len("null")
		return true
	}
	return false
}

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
	if p.b[p.i] != '"' {
		return "", false
	}
	start := p.i + 1
	j := start
	for ; p.b[j] != '"'; j++ {
		if c := p.b[j]; c == '\\' || c >= utf8.RuneSelf {
			return p.escaped(start)
		}
	}
	p.i = j + 1
	return string(p.b[start:j]), true
}

// escaped reads the string that began at start, the slow way.
func (p *wholeParser) escaped(start int) (string, bool) {
	out := make([]byte, 0, 64)
	j := start
	for {
		c := p.b[j]
		switch {
		case c == '"':
			p.i = j + 1
			return string(out), true
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
			var r rune
			for _, h := range p.b[j+1 : j+5] {
				r <<= 4
				switch {
				case h >= '0' && h <= '9':
					r |= rune(h - '0')
				case h >= 'a' && h <= 'f':
					r |= rune(h - 'a' + 10)
				default:
					r |= rune(h - 'A' + 10)
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			j += 4
		}
		j++
	}
}

// integer reads a plain integer of at most 15 digits into *n; null leaves
// *n alone.
func (p *wholeParser) integer(n *int) bool {
	if p.null() {
		return true
	}
	j, neg := p.i, false
	if p.b[j] == '-' {
		neg = true
		j++
	}
	v, digits := 0, 0
	for ; j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9'; j++ {
		v = v*10 + int(p.b[j]-'0')
		digits++
	}
	if digits == 0 || digits > 15 || (j < len(p.b) && (p.b[j] == '.' || p.b[j] == 'e' || p.b[j] == 'E')) {
		return false
	}
	if neg {
		v = -v
	}
	*n, p.i = v, j
	return true
}

// raw returns a copy of the value's bytes, as json.RawMessage keeps them.
func (p *wholeParser) raw() json.RawMessage {
	start := p.i
	p.skip()
	return append(json.RawMessage(nil), p.b[start:p.i]...)
}

// skip passes over one value, stopping right after it.
func (p *wholeParser) skip() {
	depth := 0
	for {
		switch c := p.b[p.i]; c {
		case '"':
			p.i++
			for p.b[p.i] != '"' {
				if p.b[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
			p.i++
		case '{', '[':
			depth++
			p.i++
		case '}', ']':
			depth--
			p.i++
		case ',', ':', ' ', '\t', '\n', '\r': // inside an array or object
			p.i++
		default:
			for p.i < len(p.b) && !endsLiteral(p.b[p.i]) {
				p.i++
			}
		}
		if depth == 0 {
			return
		}
	}
}

// endsLiteral reports a byte that may follow a number, true, false or null.
func endsLiteral(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// array reads an array (or null, leaving it nil), calling elem for each
// element, positioned at it.
func (p *wholeParser) array(elem func() bool) (isNull, ok bool) {
	if p.null() {
		return true, true
	}
	if p.b[p.i] != '[' {
		return false, false
	}
	p.i++
	for {
		p.space()
		switch p.b[p.i] {
		case ']':
			p.i++
			return false, true
		case ',':
			p.i++
			p.space()
		}
		if !elem() {
			return false, false
		}
		p.space()
	}
}

func (p *wholeParser) choices(w *wholeReply) bool {
	list := make([]wholeChoice, 0, 1)
	isNull, ok := p.array(func() bool {
		list = append(list, wholeChoice{})
		c := &list[len(list)-1]
		if p.null() {
			return true
		}
		return p.object(choiceFields, func(k int) bool {
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
	})
	if ok && !isNull {
		w.Choices = list
	}
	return ok
}

func (p *wholeParser) toolCalls(calls *[]wireToolCall) bool {
	list := make([]wireToolCall, 0, 1)
	isNull, ok := p.array(func() bool {
		list = append(list, wireToolCall{})
		tc := &list[len(list)-1]
		if p.null() {
			return true
		}
		return p.object(callFields, func(k int) bool {
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
				tc.ExtraContent = p.raw()
				return true
			}
		})
	})
	if ok {
		if isNull {
			*calls = nil
		} else {
			*calls = list
		}
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
