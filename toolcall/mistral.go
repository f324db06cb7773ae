package toolcall

import (
	"strings"
)

const (
	mistralCalls  = "[TOOL_CALLS]"
	mistralArgs   = "[ARGS]"
	mistralCallID = "[CALL_ID]"
)

// parseMistral reads both generations of Mistral tool calls:
// [TOOL_CALLS][{"name": …, "arguments": {…}}, …] and, from tokenizer v11
// on, [TOOL_CALLS]NAME[ARGS]{…} (Magistral adds [CALL_ID]id before
// [ARGS]), once per call or several after one marker.
func (p *parser) parseMistral() *outcome {
	if !p.contains(mistralCalls) {
		return nil
	}
	o := &outcome{}
	text := p.text
	marker := p.finder(mistralCalls)
	for pos := 0; pos < len(text); {
		m := marker.next(pos)
		if m < 0 {
			break
		}
		i := p.skipSpace(m+len(mistralCalls), len(text))
		n := len(o.calls)
		switch {
		case i < len(text) && (text[i] == '[' || text[i] == '{'):
			e, closed := p.jsonExtent(i, len(text))
			p.mistralJSON(o, text[i:e], !closed)
			if len(o.calls) > n {
				o.cuts = append(o.cuts, span{m, e})
			}
			pos = e
		case i < len(text) && v11NameByte(text[i]):
			e := p.mistralV11(o, i)
			if len(o.calls) > n {
				o.cuts = append(o.cuts, span{m, e})
			}
			pos = e
		default:
			what := "nothing"
			if i < len(text) {
				what = "“" + truncate(strings.TrimSpace(text[i:min(len(text), i+40)]), 40) + "”"
			}
			o.problem("your [TOOL_CALLS] marker is followed by %s, which is neither a JSON list of calls nor NAME[ARGS]{…}; %s", what, p.hint(FormatMistral, ""))
			o.attemptFormat(FormatMistral)
			pos = m + len(mistralCalls)
		}
	}
	if len(o.calls) == 0 && len(o.problems) == 0 && len(o.unmatched) == 0 {
		return nil
	}
	return o
}

func (p *parser) mistralJSON(o *outcome, body string, trunc bool) {
	o.attemptFormat(FormatMistral)
	v, err := p.decodeLenient(body, trunc)
	if err != nil {
		if !o.full() {
			o.problem("the JSON after your [TOOL_CALLS] marker %s; %s", jsonProblem(body, err), p.hint(FormatMistral, ""))
		}
		return
	}
	raws, ok := callsFromValue(v, 0)
	if !ok {
		o.problem("the JSON after your [TOOL_CALLS] marker is not a list of calls with a \"name\"; %s", p.hint(FormatMistral, ""))
		return
	}
	for _, rc := range raws {
		p.addCall(o, rc.name, rc.args, true, FormatMistral)
	}
}

func v11NameByte(c byte) bool { return isIdentByte(c) || c == '-' || c == '.' || c == ':' }

// mistralV11 reads NAME[ARGS]{…} calls from i and returns where they end.
func (p *parser) mistralV11(o *outcome, i int) int {
	text := p.text
	o.attemptFormat(FormatMistralV11)
	for {
		start := i
		for i < len(text) && v11NameByte(text[i]) && i-start < maxTagNameLength {
			i++
		}
		p.charge(i - start)
		name := text[start:i]
		if strings.HasPrefix(text[i:], mistralCallID) {
			// [CALL_ID]id: the id is ours to assign, skip it
			i += len(mistralCallID)
			j := i
			for i < len(text) && text[i] != '[' && i-j < maxTagNameLength {
				i++
			}
			p.charge(i - j)
		}
		a := -1
		switch {
		case strings.HasPrefix(text[i:], mistralArgs):
			a = p.skipSpace(i+len(mistralArgs), len(text))
		case i > start && i < len(text) && text[i] == '{':
			// [ARGS] is a special token: decoded without special tokens
			// the call reads NAME{…} (vLLM's fn_name_regex).
			a = i
		}
		if a < 0 {
			o.problem("your [TOOL_CALLS] marker is followed by %q without [ARGS]; %s", truncate(text[start:min(len(text), start+40)], 40), p.hint(FormatMistralV11, ""))
			return i
		}
		if a >= len(text) || text[a] != '{' {
			o.problem("the arguments after [ARGS] in your call to %q must be a JSON object; %s", name, p.hint(FormatMistralV11, name))
			return a
		}
		e, closed := p.jsonExtent(a, len(text))
		body := text[a:e]
		v, err := p.decodeLenient(body, !closed)
		if err != nil {
			if !o.full() {
				o.problem("the arguments of your call to %q %s; %s", name, jsonProblem(body, err), p.hint(FormatMistralV11, name))
			}
		} else {
			p.addCall(o, name, v, true, FormatMistralV11)
		}
		// Another NAME[ARGS] may follow without a new marker.
		n := p.skipSpace(e, len(text))
		j := n
		for j < len(text) && v11NameByte(text[j]) && j-n < maxTagNameLength {
			j++
		}
		p.charge(j - n)
		if j == n || !(strings.HasPrefix(text[j:], mistralArgs) || strings.HasPrefix(text[j:], mistralCallID) || (j < len(text) && text[j] == '{')) {
			return e
		}
		i = n
	}
}
