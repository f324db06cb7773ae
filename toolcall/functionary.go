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
	head0 := p.tools.offered() && (p.functionaryHead(0) || strings.HasPrefix(text, "all\n") || p.pythonHead(0))
	if !p.contains(functionaryMark) && !head0 {
		return nil
	}
	o := &outcome{}
	var pieces []string
	var open span // the text piece being grown, when open.end > 0
	// keep adds text[lo:hi] to the content, joined to the last piece when
	// it follows it directly (a segment that opened inside a line).
	keep := func(lo, hi int) {
		if open.end > 0 && lo == open.end {
			open.end = hi
			return
		}
		if open.end > 0 {
			pieces = append(pieces, text[open.start:open.end])
		}
		open = span{lo, hi}
	}
	// body pieces (the "all" channel) are not from contiguous text
	flush := func() {
		if open.end > 0 {
			pieces = append(pieces, text[open.start:open.end])
			open = span{}
		}
	}
	starts := []int{}
	if head0 {
		starts = append(starts, 0)
	}
	mark := p.finder(functionaryMark)
	for pos := 0; ; {
		m := mark.next(pos)
		if m < 0 {
			break
		}
		// At a line's start, or anywhere before "all\n", "python\n" or
		// "NAME\n{" (llama.cpp's Functionary v3.2 regex).
		if at := m + len(functionaryMark); m == 0 || text[m-1] == '\n' || strings.HasPrefix(text[at:], "all\n") || p.pythonHead(at) || p.functionaryHead(at) {
			starts = append(starts, m+len(functionaryMark))
		}
		pos = m + len(functionaryMark)
	}
	if len(starts) == 0 {
		return nil
	}
	if starts[0] > len(functionaryMark) { // text before the first segment
		keep(0, starts[0]-len(functionaryMark))
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
			flush()
			pieces = append(pieces, body)
			continue
		}
		if head == "python" && !strings.HasPrefix(strings.TrimSpace(body), "{") && strings.TrimSpace(body) != "" {
			// >>>python\n followed by raw code: llama.cpp calls the
			// python tool with {"code": …}.
			args := appendJSONString([]byte(`{"code":`), strings.TrimRight(body, " \t\n"))
			o.attemptFormat(FormatFunctionaryV32)
			if !p.addCall(o, head, append(args, '}'), true, FormatFunctionaryV32) {
				keep(max(0, s-len(functionaryMark)), e)
			}
			continue
		}
		body = stripFence(body)
		if !validName(head) || (body != "" && body[0] != '{') {
			keep(max(0, s-len(functionaryMark)), e)
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
			keep(max(0, s-len(functionaryMark)), e)
			continue
		}
		if !p.addCall(o, head, v, true, FormatFunctionaryV32) {
			keep(max(0, s-len(functionaryMark)), e)
		}
	}
	if len(o.calls) == 0 && len(o.problems) == 0 && len(o.unmatched) == 0 {
		return nil
	}
	flush()
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

// pythonHead reports whether the text at i starts "python\n" with a tool
// named python offered.
func (p *parser) pythonHead(i int) bool {
	if !strings.HasPrefix(p.text[i:], "python\n") {
		return false
	}
	_, ok := p.tools.resolve("python")
	return ok
}
