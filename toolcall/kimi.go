package toolcall

import "strings"

const (
	kimiSectionBegin = "<|tool_calls_section_begin|>"
	kimiSectionEnd   = "<|tool_calls_section_end|>"
	kimiCallBegin    = "<|tool_call_begin|>"
	kimiCallEnd      = "<|tool_call_end|>"
	kimiArgBegin     = "<|tool_call_argument_begin|>"
)

// parseKimi reads Kimi K2's calls:
//
//	<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>…<|tool_calls_section_end|>
//
// The "functions." prefix and the ":IDX" suffix of the call id are dropped.
// A call cut off at the end of the reply is decoded with its open braces
// closed; one without an argument marker is reported.
func (p *parser) parseKimi() *outcome {
	if !p.contains(kimiCallBegin) {
		return nil
	}
	o := &outcome{}
	text := p.text
	begin, end := p.finder(kimiCallBegin), p.finder(kimiCallEnd)
	secBegin, secEnd := p.finder(kimiSectionBegin), p.finder(kimiSectionEnd)
	argBegin := p.finder(kimiArgBegin)
	for pos := 0; pos < len(text); {
		cb := begin.next(pos)
		if cb < 0 {
			break
		}
		regionStart := cb
		if s := secBegin.before(pos, cb); s >= 0 {
			regionStart = s
		}
		i := cb
		n := len(o.calls)
		for strings.HasPrefix(text[i:], kimiCallBegin) {
			bodyStart := i + len(kimiCallBegin)
			bodyEnd, after := len(text), len(text)
			if e := end.next(bodyStart); e >= 0 {
				bodyEnd, after = e, e+len(kimiCallEnd)
			}
			if nb := begin.before(bodyStart, bodyEnd); nb >= 0 {
				bodyEnd, after = nb, nb
			}
			if se := secEnd.before(bodyStart, bodyEnd); se >= 0 {
				bodyEnd, after = se, se
			}
			p.kimiCall(o, argBegin, bodyStart, bodyEnd, after == len(text))
			i = p.skipSpace(after, len(text))
		}
		if strings.HasPrefix(text[i:], kimiSectionEnd) {
			i += len(kimiSectionEnd)
		}
		if len(o.calls) > n {
			o.cuts = append(o.cuts, span{regionStart, i})
		}
		pos = i
	}
	if len(o.calls) == 0 && len(o.problems) == 0 && len(o.unmatched) == 0 {
		return nil
	}
	return o
}

// kimiCall reads one call from the body [lo, hi) of a call marker.
func (p *parser) kimiCall(o *outcome, argBegin *finder, lo, hi int, atEOF bool) {
	o.attemptFormat(FormatKimiK2)
	a := argBegin.before(lo, hi)
	if a < 0 {
		o.problem("your tool call has no <|tool_call_argument_begin|> between the call id and the arguments; %s", p.hint(FormatKimiK2, ""))
		return
	}
	name := kimiName(strings.TrimSpace(p.text[lo:a]))
	args := strings.TrimSpace(p.text[a+len(kimiArgBegin) : hi])
	p.charge(hi - lo)
	if args == "" {
		args = "{}"
	}
	v, err := p.decodeLenient(args, atEOF)
	if err != nil {
		if !o.full() {
			o.problem("the arguments of your call to %q %s; %s", name, jsonProblem(args, err), p.hint(FormatKimiK2, name))
		}
		return
	}
	p.addCall(o, name, v, true, FormatKimiK2)
}

// kimiName turns a call id "functions.NAME:IDX" into NAME.
func kimiName(id string) string {
	id = strings.TrimPrefix(id, "functions.")
	if c := strings.LastIndexByte(id, ':'); c >= 0 {
		if _, ok := parseInt(id[c+1:]); ok {
			id = id[:c]
		}
	}
	return id
}
