package toolcall

import "strings"

const functionaryMark = ">>>"

// parseFunctionaryV32 reads Functionary v3.2 replies: segments introduced
// by ">>>RECIPIENT\n" at the start of a line, where RECIPIENT "all" is text
// for the user and any other is a tool called with the JSON that follows.
//
//	>>>all
//	Let me check.
//	>>>get_weather
//	{"city": "Oslo"}
//
// The prompt usually ends with the first ">>>", so a reply may start with
// "NAME\n{" directly: that is a call only when NAME is an offered tool.
func (p *parser) parseFunctionaryV32() *outcome {
	text := p.text
	if !p.contains(functionaryMark) && !(p.tools.offered() && p.functionaryHead(0)) {
		return nil
	}
	o := &outcome{}
	var pieces []string
	starts := []int{}
	if p.tools.offered() && p.functionaryHead(0) {
		starts = append(starts, 0)
	}
	mark := p.finder(functionaryMark)
	for pos := 0; ; {
		m := mark.next(pos)
		if m < 0 {
			break
		}
		if m == 0 || text[m-1] == '\n' {
			starts = append(starts, m+len(functionaryMark))
		}
		pos = m + len(functionaryMark)
	}
	if len(starts) == 0 {
		return nil
	}
	if starts[0] > len(functionaryMark) { // text before the first segment
		pieces = append(pieces, text[:starts[0]-len(functionaryMark)])
	}
	for n, s := range starts {
		e := len(text)
		if n+1 < len(starts) {
			e = starts[n+1] - len(functionaryMark)
		}
		seg := text[s:e]
		p.charge(len(seg))
		head, body, _ := strings.Cut(seg, "\n")
		head = strings.TrimSpace(head)
		if head == "all" {
			pieces = append(pieces, body)
			continue
		}
		body = stripFence(body)
		if !validName(head) || (body != "" && body[0] != '{') {
			pieces = append(pieces, text[max(0, s-len(functionaryMark)):e])
			continue
		}
		o.attemptFormat(FormatFunctionaryV32)
		if body == "" {
			body = "{}"
		}
		v, err := p.decodeLenient(body, e == len(text))
		if err != nil {
			if !o.full() {
				o.problem("the arguments of your call to %q %s; %s", head, jsonProblem(body, err), p.hint(FormatFunctionaryV32, head))
			}
			pieces = append(pieces, text[max(0, s-len(functionaryMark)):e])
			continue
		}
		if !p.addCall(o, head, v, true, FormatFunctionaryV32) {
			pieces = append(pieces, text[max(0, s-len(functionaryMark)):e])
		}
	}
	if len(o.calls) == 0 && len(o.problems) == 0 && len(o.unmatched) == 0 {
		return nil
	}
	content := joinPieces(pieces)
	o.content = &content
	return o
}

// functionaryHead reports whether the text at i starts "NAME\n{" with NAME
// an offered tool.
func (p *parser) functionaryHead(i int) bool {
	text := p.text[i:]
	nl := strings.IndexByte(text[:min(len(text), maxTagNameLength)], '\n')
	p.charge(min(len(text), maxTagNameLength))
	if nl < 0 {
		return false
	}
	name := strings.TrimSpace(text[:nl])
	if _, ok := p.tools.resolve(name); !ok || !validName(name) {
		return false
	}
	rest := text[nl+1:]
	j := 0
	for j < len(rest) && j < 64 && isSpace(rest[j]) {
		j++
	}
	return j < len(rest) && rest[j] == '{'
}
