package openai

import (
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/agentloop/agentloop/internal/jsonread"
)

// decodeWhole fills w, which must be zero, from doc, a whole
// chat.completion, exactly as json.Unmarshal would — for the replies
// servers send — and reports false for anything it does not decode that
// way itself: invalid JSON, a value of another type than the field's,
// an integer that is not a plain one of at most 15 digits, an escaped
// surrogate or invalid UTF-8 in a string, a key written in another case
// (or with escapes or non-ASCII letters) that json.Unmarshal might still
// match to a field, a key given twice, nesting deeper than
// jsonread.MaxDepth. The caller then resets w and decodes doc with
// encoding/json, which also words the error.
//
// It is a reader of this one shape that checks the syntax as it reads,
// with no reflection: a short tool-call reply is decoded in 1.1 µs
// instead of 4.1 (BenchmarkDecodeWhole), with fewer allocations, and in
// small stack frames — json.Unmarshal's recursion through a reply's six
// levels of nesting is what grew a session's stack past 8 KiB at every
// model call, and a session waiting for its next reply 6.6 KiB deep could
// not shrink it back (see the history of bench/README.md).
func decodeWhole(doc []byte, w *wholeReply) bool {
	p := wholeParser{jsonread.Reader{B: doc}}
	p.Space()
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
	}) && p.AtEnd()
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

// wholeParser reads a reply with a jsonread.Reader, which checks the
// syntax as it goes: any syntax error makes a method report false, as
// does a value of a shape it does not decode.
type wholeParser struct{ jsonread.Reader }

// object reads an object whose keys are among fields, calling member with
// the index of each key found, positioned at its value; unknown keys are
// skipped. It reports false on anything but an object, on a key given
// twice, and on a key json.Unmarshal might match to a field without it
// being written exactly so (another case, escapes, non-ASCII letters).
func (p *wholeParser) object(fields []string, member func(k int) bool) bool {
	var seen uint32
	return p.Object(func(key []byte, escaped bool) bool {
		if escaped || !ascii(key) {
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
			return p.Skip()
		case seen&(1<<k) != 0:
			return false
		}
		seen |= 1 << k
		return member(k)
	})
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
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
func (p *wholeParser) null() bool { return p.Literal("null") }

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

// text reads a string value, unescaping it (jsonread.Unquote: an escaped
// surrogate or invalid UTF-8 is not decoded here).
func (p *wholeParser) text() (string, bool) {
	raw, escaped, ok := p.String()
	if !ok {
		return "", false
	}
	return jsonread.Unquote(raw, escaped)
}

// integer reads a plain integer of at most 15 digits into *n; null leaves
// *n alone.
func (p *wholeParser) integer(n *int) bool {
	if p.null() {
		return true
	}
	num, ok := p.Number()
	v, exact := num.Exact()
	if ok && exact {
		*n = int(v)
	}
	return ok && exact
}

// raw returns a copy of the value's bytes, as json.RawMessage keeps them.
func (p *wholeParser) raw() (json.RawMessage, bool) {
	start := p.I
	if !p.Skip() {
		return nil, false
	}
	return append(json.RawMessage(nil), p.B[start:p.I]...), true
}

// array reads an array (or null, leaving it nil), calling elem for each
// element, positioned at it.
func (p *wholeParser) array(elem func() bool) (isNull, ok bool) {
	if p.null() {
		return true, true
	}
	_, ok = p.Array(elem)
	return false, ok
}

// objectList reads an array of objects, or null, into a new slice: each
// element is read by object with fields and member, a null one left zero.
func objectList[T any](p *wholeParser, fields []string, member func(v *T, k int) bool) (list []T, isNull, ok bool) {
	list = make([]T, 0, 1)
	isNull, ok = p.array(func() bool {
		// Grown in place rather than by appending a zero T: the zero
		// value would be a temporary in this frame, which is on the
		// stack at every level of the reply's nesting.
		list = slices.Grow(list, 1)[:len(list)+1]
		v := &list[len(list)-1]
		clear(list[len(list)-1:])
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
