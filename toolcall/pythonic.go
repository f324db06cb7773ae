package toolcall

import (
	"slices"
	"strings"
)

// pyCall is one call of a pythonic call list.
type pyCall struct {
	name string
	args []byte
}

// dottedName reads a call name such as get_weather or brave_search.call.
func (l *litParser) dottedName() string {
	start := l.i
	for l.i < len(l.s) && (isIdentByte(l.s[l.i]) || (l.s[l.i] == '.' && l.i > start)) {
		l.i++
	}
	return l.s[start:l.i]
}

// call parses name(k=v, …) into a pyCall.
func (l *litParser) call() (pyCall, error) {
	l.ws()
	if l.eof() || !isIdentStart(l.s[l.i]) {
		return pyCall{}, l.fail("expected a function name")
	}
	name := l.dottedName()
	l.ws()
	if l.eof() || l.s[l.i] != '(' {
		return pyCall{}, l.fail("expected '(' after %q", truncate(name, 32))
	}
	l.i++
	saved := l.out
	l.out = []byte{'{'}
	defer func() { l.out = saved }()
	for first := true; ; first = false {
		l.ws()
		if !first && !l.eof() && l.s[l.i] == ',' {
			l.i++
			l.ws()
		} else if !first && !l.eof() && l.s[l.i] != ')' {
			return pyCall{}, l.fail("expected ',' or ')' after an argument of %q", truncate(name, 32))
		}
		if l.eof() {
			return pyCall{}, l.fail("the call to %q is never closed with ')'", truncate(name, 32))
		}
		if l.s[l.i] == ')' {
			l.i++
			return pyCall{name: name, args: append(l.out, '}')}, nil
		}
		if !isIdentStart(l.s[l.i]) {
			return pyCall{}, l.fail("%q takes only keyword arguments (name=value)", truncate(name, 32))
		}
		key := l.ident()
		l.ws()
		if l.eof() || l.s[l.i] != '=' {
			return pyCall{}, l.fail("%q takes only keyword arguments (name=value)", truncate(name, 32))
		}
		l.i++
		if !first {
			l.out = append(l.out, ',')
		}
		l.out = appendJSONString(l.out, key)
		l.out = append(l.out, ':')
		if err := l.value(); err != nil {
			return pyCall{}, err
		}
	}
}

// callList parses [call, call, …].
func (l *litParser) callList() ([]pyCall, error) {
	l.i++ // '['
	var calls []pyCall
	for {
		l.ws()
		if len(calls) > 0 && !l.eof() && l.s[l.i] == ',' {
			l.i++
			l.ws()
		} else if len(calls) > 0 && !l.eof() && l.s[l.i] != ']' {
			return nil, l.fail("expected ',' or ']' after a call")
		}
		if l.eof() {
			return nil, l.fail("the call list is never closed with ']'")
		}
		if l.s[l.i] == ']' {
			l.i++
			if len(calls) == 0 {
				return nil, l.fail("the call list is empty")
			}
			return calls, nil
		}
		c, err := l.call()
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
}

// parsePythonic finds [name(k=v), …] lists. Without offered tools a list
// must start a line; with them, only offered names count.
func (p *parser) parsePythonic() *outcome {
	const start, end = "<|python_start|>", "<|python_end|>"
	o := &outcome{format: FormatPythonic}
	text := p.text
	p.charge(len(text))
	// [wholeStart, wholeEnd) is the reply less spaces and Llama 4 markers:
	// a list spanning it is clearly meant as calls.
	wholeStart := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
	wholeEnd := len(strings.TrimRight(text, " \t\r\n"))
	wrapped := strings.HasPrefix(text[wholeStart:], start)
	if wrapped {
		wholeStart += len(start)
		wholeStart += len(text[wholeStart:]) - len(strings.TrimLeft(text[wholeStart:], " \t\r\n"))
		if strings.HasSuffix(text[:wholeEnd], end) && wholeEnd-len(end) >= wholeStart {
			wholeEnd = len(strings.TrimRight(text[:wholeEnd-len(end)], " \t\r\n"))
		}
	}
	l := &litParser{}
	for pos := 0; pos < len(text); {
		i := strings.IndexByte(text[pos:], '[')
		if i < 0 {
			p.charge(len(text) - pos)
			break
		}
		p.charge(i + 1)
		s := pos + i
		pos = s + 1
		if !p.looksLikeCallList(s) {
			continue
		}
		*l = litParser{s: text[s:], out: l.out[:0]}
		calls, err := l.callList()
		p.charge(l.i)
		isWhole := s == wholeStart && (err != nil || s+l.i == wholeEnd)
		if err != nil {
			if isWhole && len(o.calls) == 0 {
				le := err.(*litError)
				if !o.full() {
					o.problem("your call list is not valid at offset %d (near %q): %s; %s", le.off, snippet(text[s:], le.off), le.msg(), p.hint(FormatPythonic, ""))
				}
			}
			if l.i > 1 {
				pos = s + l.i
			}
			continue
		}
		if !p.tools.offered() && !p.atLineStart(s) {
			pos = s + l.i
			continue
		}
		n := len(o.calls)
		for _, c := range calls {
			name := strings.TrimSuffix(c.name, ".call")
			p.addCall(o, name, c.args, isWhole || wrapped, FormatPythonic)
		}
		if len(o.calls) > n {
			o.cuts = append(o.cuts, span{s, s + l.i})
		}
		pos = s + l.i
	}
	if len(o.calls) == 0 && len(o.problems) == 0 {
		return nil
	}
	if wrapped {
		o.cuts = p.cutMarkers(o.cuts, start, end)
	}
	return o
}

// looksLikeCallList reports whether '[' at s starts "[name(".
func (p *parser) looksLikeCallList(s int) bool {
	text := p.text
	i := s + 1
	for i < len(text) && isSpace(text[i]) {
		i++
	}
	j := i
	for j < len(text) && (isIdentByte(text[j]) || text[j] == '.') {
		j++
	}
	p.charge(j - s)
	if j == i || !isIdentStart(text[i]) || j >= len(text) {
		return false
	}
	return text[j] == '('
}

// atLineStart reports whether only spaces or tabs precede s on its line.
func (p *parser) atLineStart(s int) bool {
	i := s - 1
	for i >= 0 && (p.text[i] == ' ' || p.text[i] == '\t') {
		i--
	}
	p.charge(s - i)
	return i < 0 || p.text[i] == '\n' || strings.HasSuffix(p.text[:i+1], "<|python_start|>")
}

// cutMarkers adds the first occurrence of each marker to cuts, keeping
// them sorted.
func (p *parser) cutMarkers(cuts []span, markers ...string) []span {
	for _, m := range markers {
		if i := strings.Index(p.text, m); i >= 0 {
			p.charge(i + len(m))
			cuts = append(cuts, span{i, i + len(m)})
		} else {
			p.charge(len(p.text))
		}
	}
	sortSpans(cuts)
	return cuts
}

// sortSpans sorts spans by start; without clamps any overlap.
func sortSpans(cuts []span) {
	slices.SortFunc(cuts, func(a, b span) int { return a.start - b.start })
}
