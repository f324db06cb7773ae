package toolcall

import (
	"strings"
)

const (
	pythonTag = "<|python_tag|>"
	llamaEOM  = "<|eom_id|>"
	llamaEOT  = "<|eot_id|>"
)

// parsePythonTag reads Llama 3.x calls after <|python_tag|>: JSON objects
// ({"name": …, "parameters": {…}}, several separated by ';') or built-in
// tool calls such as brave_search.call(query="…"). The call runs to
// <|eom_id|>, <|eot_id|> or the end of the reply.
func (p *parser) parsePythonTag() *outcome {
	if !p.contains(pythonTag) {
		return nil
	}
	o := &outcome{format: FormatLlamaPythonTag}
	text := p.text
	tags, eom, eot := p.finder(pythonTag), p.finder(llamaEOM), p.finder(llamaEOT)
	for pos := 0; pos < len(text); {
		t := tags.next(pos)
		if t < 0 {
			break
		}
		bodyStart := t + len(pythonTag)
		end, after := len(text), len(text)
		if e := eom.next(bodyStart); e >= 0 {
			end, after = e, e+len(llamaEOM)
		}
		if e := eot.before(bodyStart, end); e >= 0 {
			end, after = e, e+len(llamaEOT)
		}
		if n := tags.before(bodyStart, end); n >= 0 {
			end, after = n, n
		}
		n := len(o.calls)
		p.pythonTagBody(o, bodyStart, end)
		if len(o.calls) > n {
			o.cuts = append(o.cuts, span{t, after})
		}
		pos = after
	}
	if len(o.calls) == 0 && len(o.problems) == 0 && len(o.unmatched) == 0 {
		return nil
	}
	return o
}

func (p *parser) pythonTagBody(o *outcome, i, end int) {
	text := p.text
	for {
		i = p.skipSpace(i, end)
		if i >= end {
			return
		}
		switch c := text[i]; {
		case c == '{' || c == '[':
			e, closed := p.jsonExtent(i, end)
			body := text[i:e]
			v, err := p.decodeLenient(body, !closed)
			if err != nil {
				if !o.full() {
					o.problem("the JSON after <|python_tag|> %s; %s", jsonProblem(body, err), p.hint(FormatLlamaPythonTag, ""))
				}
				return
			}
			raws, ok := callsFromValue(v, 0)
			if !ok {
				o.problem("the JSON after <|python_tag|> has no tool \"name\"; %s", p.hint(FormatLlamaPythonTag, ""))
				return
			}
			for _, rc := range raws {
				p.addCall(o, rc.name, rc.args, true, FormatLlamaPythonTag)
			}
			i = e
		case isIdentStart(c):
			l := &litParser{s: text[i:end]}
			call, err := l.call()
			p.charge(l.i)
			if err != nil {
				le := err.(*litError)
				if !o.full() {
					o.problem("the call after <|python_tag|> is not valid at offset %d (near %q): %s; %s", le.off, snippet(l.s, le.off), le.msg(), p.hint(FormatLlamaPythonTag, ""))
				}
				return
			}
			p.addCall(o, strings.TrimSuffix(call.name, ".call"), call.args, true, FormatLlamaPythonTag)
			i += l.i
		default:
			o.problem("<|python_tag|> is followed by %q, which is not a call; %s", truncate(strings.TrimSpace(text[i:min(end, i+40)]), 40), p.hint(FormatLlamaPythonTag, ""))
			return
		}
		j := p.skipSpace(i, end)
		if j < end && (text[j] == ';' || text[j] == ',') {
			j++
		}
		i = j
	}
}
