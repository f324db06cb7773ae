package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// decodeLenient decodes one JSON value spanning all of s: strictly first,
// then as Python literals / lenient JSON (single quotes, True/None, trailing
// commas, raw newlines in strings). With trunc, containers left open at the
// end of s are closed. The error is the strict decoder's, which says best
// what is wrong.
func (p *parser) decodeLenient(s string, trunc bool) ([]byte, error) {
	p.charge(len(s))
	b := []byte(s)
	if json.Valid(b) {
		return b, nil
	}
	p.charge(len(s))
	l := &litParser{s: s, trunc: trunc}
	err := l.value()
	if err == nil {
		l.ws()
		if !l.eof() {
			err = l.fail("unexpected text after the value")
		}
	}
	if err != nil {
		return nil, &strictError{b}
	}
	return l.out, nil
}

// strictError is the strict decoder's complaint about b, worked out only
// when a problem message needs it.
type strictError struct{ b []byte }

func (e *strictError) err() error {
	var v json.RawMessage
	if err := json.Unmarshal(e.b, &v); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}

func (e *strictError) Error() string { return e.err().Error() }

// jsonProblem describes a decoding error of body for a problem message.
func jsonProblem(body string, err error) string {
	if lazy, ok := err.(*strictError); ok {
		err = lazy.err()
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if strings.Contains(se.Error(), "unexpected end") {
			return "is not valid JSON: it ends before the value is complete (a missing closing brace, bracket or quote)"
		}
		return fmt.Sprintf("is not valid JSON at offset %d (near %q): %s", se.Offset, snippet(body, int(se.Offset)), se.Error())
	}
	return "is not valid JSON: " + err.Error()
}

// jsonExtent returns the end of the bracketed value opening at start,
// skipping strings in either quote, or (limit, false) when it is not
// closed before limit. A closer with no matching opener is ignored; one
// that skips openers closes them too.
func (p *parser) jsonExtent(start, limit int) (int, bool) {
	text := p.text
	var stack []byte
	var curly, square int
	var quote byte
	i := start
	for ; i < limit; i++ {
		c := text[i]
		if quote != 0 {
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '{':
			stack = append(stack, '}')
			curly++
		case '[':
			stack = append(stack, ']')
			square++
		case '}', ']':
			if (c == '}' && curly == 0) || (c == ']' && square == 0) {
				continue
			}
			for {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top == '}' {
					curly--
				} else {
					square--
				}
				if top == c {
					break
				}
			}
			if len(stack) == 0 {
				p.charge(i + 1 - start)
				return i + 1, true
			}
		}
	}
	p.charge(limit - start)
	return limit, false
}

// rawCall is a call-shaped JSON object before name resolution.
type rawCall struct {
	name    string
	args    json.RawMessage
	hasArgs bool // an arguments key was present
	bare    bool // nothing but the name (and type/id)
	llama   bool // {"name", "parameters"} or {"type": "function", "name", …}
}

var (
	nameKeys = []string{"name", "tool_name", "tool", "function", "action", "function_name", "recipient_name"}
	argKeys  = []string{"arguments", "parameters", "args", "tool_input", "input", "params", "tool_args", "action_input", "kwargs"}
)

// callsFromValue reads the calls in a decoded JSON value: a call object, an
// array of them, {"tool_calls": […]}, {"function_call": {…}}.
func callsFromValue(v []byte, depth int) ([]rawCall, bool) {
	v = trimJSON(v)
	if len(v) == 0 || depth > 3 {
		return nil, false
	}
	switch v[0] {
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(v, &arr) != nil || len(arr) == 0 {
			return nil, false
		}
		var calls []rawCall
		for _, e := range arr {
			e = trimJSON(e)
			if len(e) == 0 || e[0] != '{' {
				return nil, false
			}
			cs, ok := callsFromValue(e, depth+1)
			if !ok {
				return nil, false
			}
			calls = append(calls, cs...)
		}
		return calls, true
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			return nil, false
		}
		for _, k := range []string{"tool_calls", "function_call", "tool_call"} {
			if inner, ok := m[k]; ok {
				return callsFromValue(inner, depth+1)
			}
		}
		c, ok := callFromObject(m)
		if !ok {
			return nil, false
		}
		return []rawCall{c}, true
	}
	return nil, false
}

func trimJSON(v []byte) []byte {
	for len(v) > 0 && isSpace(v[0]) {
		v = v[1:]
	}
	for len(v) > 0 && isSpace(v[len(v)-1]) {
		v = v[:len(v)-1]
	}
	return v
}

func callFromObject(m map[string]json.RawMessage) (rawCall, bool) {
	if fn, ok := m["function"]; ok && len(trimJSON(fn)) > 0 && trimJSON(fn)[0] == '{' {
		var inner map[string]json.RawMessage
		if json.Unmarshal(fn, &inner) != nil {
			return rawCall{}, false
		}
		c, ok := callFromObject(inner)
		c.bare = c.bare && len(m) <= 3
		c.llama = false
		return c, ok
	}
	var c rawCall
	nameKey := ""
	for _, k := range nameKeys {
		raw, ok := m[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			c.name, nameKey = s, k
			break
		}
	}
	if nameKey == "" {
		return rawCall{}, false
	}
	argKey := ""
	for _, k := range argKeys {
		if raw, ok := m[k]; ok {
			c.args, c.hasArgs, argKey = raw, true, k
			break
		}
	}
	c.bare = true
	for k := range m {
		if k != nameKey && k != "type" && k != "id" {
			c.bare = false
		}
	}
	var typ string
	_ = json.Unmarshal(m["type"], &typ)
	c.llama = nameKey == "name" && (argKey == "parameters" || (typ == "function" && argKey != "arguments"))
	return c, true
}

// fence is a ``` code block: [start, end) whole, [bodyStart, bodyEnd) inside.
type fence struct {
	start, bodyStart, bodyEnd, end int
	lang                           string
}

// fences finds code fences: an opening ``` at the start of a line, closed
// by the next ``` anywhere (models often close on the last line of JSON).
func (p *parser) fences() []fence {
	text := p.text
	ticks := p.finder("```")
	var out []fence
	for pos := 0; ; {
		i := ticks.next(pos)
		if i < 0 {
			return out
		}
		if !p.lineStartBefore(i) {
			pos = i + 3
			continue
		}
		f := fence{start: i}
		j := i + 3
		for j < len(text) && (isIdentByte(text[j]) || text[j] == '-' || text[j] == '+') {
			j++
		}
		f.lang = strings.ToLower(text[i+3 : j])
		k := j
		for k < len(text) && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r') {
			k++
		}
		if k < len(text) && text[k] == '\n' {
			k++
		}
		p.charge(k - i)
		f.bodyStart = k
		c := ticks.next(k)
		if c < 0 {
			f.bodyEnd, f.end = len(text), len(text)
			return append(out, f)
		}
		f.bodyEnd, f.end = c, c+3
		out = append(out, f)
		pos = c + 3
	}
}

// lineStartBefore reports whether only spaces or tabs precede i on its line.
func (p *parser) lineStartBefore(i int) bool {
	j := i - 1
	for j >= 0 && (p.text[j] == ' ' || p.text[j] == '\t') && i-j < 8 {
		j--
	}
	p.charge(i - j)
	return j < 0 || p.text[j] == '\n'
}

func jsonLikeFence(lang string) bool {
	return lang == "" || strings.HasPrefix(lang, "json") || strings.HasPrefix(lang, "tool")
}

// parseJSON finds call objects written as plain JSON, bare or fenced.
func (p *parser) parseJSON() *outcome {
	o := &outcome{}
	fences := p.fences()
	whole := span{len(p.text) - len(strings.TrimLeft(p.text, " \t\r\n")), len(strings.TrimRight(p.text, " \t\r\n"))}
	p.charge(len(p.text))
	pos := 0
	for i := range fences {
		f := &fences[i]
		p.jsonSegment(o, pos, f.start, nil, whole)
		n := len(o.cuts)
		p.jsonSegment(o, f.bodyStart, f.bodyEnd, f, whole)
		if len(o.cuts) > n && p.onlySpaceOutside(f.bodyStart, f.bodyEnd, o.cuts[n:]) {
			o.cuts = append(o.cuts[:n], span{f.start, f.end})
		}
		pos = f.end
	}
	p.jsonSegment(o, pos, len(p.text), nil, whole)
	if len(o.calls) == 0 && len(o.problems) == 0 && len(o.unmatched) == 0 {
		return nil
	}
	if o.format == "" {
		o.format = FormatJSON
	}
	return o
}

// onlySpaceOutside reports whether [lo, hi) holds nothing but spaces
// outside the cuts.
func (p *parser) onlySpaceOutside(lo, hi int, cuts []span) bool {
	pos := lo
	for _, c := range cuts {
		if strings.TrimSpace(p.text[pos:c.start]) != "" {
			return false
		}
		p.charge(c.start - pos)
		pos = c.end
	}
	p.charge(hi - pos)
	return strings.TrimSpace(p.text[pos:hi]) == ""
}

// jsonSegment handles the bracketed values of one segment of text (prose
// between fences, or a fence body).
func (p *parser) jsonSegment(o *outcome, lo, hi int, f *fence, whole span) {
	if lo >= hi {
		return
	}
	maximal, unclosed := p.pairs(lo, hi)
	// An object left open at the end of the reply (or of its fence) may be
	// a call cut short; if it is, it covers the pairs inside it.
	truncated := unclosed >= 0 && (f != nil || hi == len(p.text))
	for _, c := range maximal {
		if truncated && c.start > unclosed {
			break
		}
		p.jsonCandidate(o, c, false, f, whole)
	}
	if !truncated {
		return
	}
	if p.jsonCandidate(o, span{unclosed, hi}, true, f, whole) {
		return
	}
	for _, c := range maximal {
		if c.start > unclosed {
			p.jsonCandidate(o, c, false, f, whole)
		}
	}
}

// maxPairDepth bounds the openers pairs tracks; a call nested deeper than
// this in unrelated brackets is not looked for (the standard JSON decoder
// stops at 10000 anyway), and memory stays bounded on "{{{{…".
const maxPairDepth = 512

// pairs finds, in one pass, the maximal bracketed spans in [lo, hi) that
// close, and the outermost opener left unclosed (-1 if none). Double-quoted
// strings are skipped once inside brackets; quotes in prose are not.
func (p *parser) pairs(lo, hi int) ([]span, int) {
	text := p.text
	p.charge(hi - lo)
	type opener struct {
		pos   int
		close byte
	}
	var stack []opener
	var curly, square int
	deeper := 0 // openers beyond maxPairDepth, not tracked
	var done []span
	inStr := false
	for i := lo; i < hi; i++ {
		c := text[i]
		if inStr {
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = len(stack) > 0
		case '{', '[':
			if len(stack) >= maxPairDepth {
				deeper++
				continue
			}
			if c == '{' {
				stack = append(stack, opener{i, '}'})
				curly++
			} else {
				stack = append(stack, opener{i, ']'})
				square++
			}
		case '}', ']':
			if deeper > 0 {
				deeper--
				continue
			}
			if (c == '}' && curly == 0) || (c == ']' && square == 0) {
				continue
			}
			var top opener
			for {
				top = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top.close == '}' {
					curly--
				} else {
					square--
				}
				if top.close == c {
					break
				}
			}
			for len(done) > 0 && done[len(done)-1].start > top.pos {
				done = done[:len(done)-1]
			}
			done = append(done, span{top.pos, i + 1})
		}
	}
	if len(stack) > 0 {
		return done, stack[0].pos
	}
	return done, -1
}

// looksLikeCallJSON is a cheap filter: an object whose first key is quoted,
// or an array of such objects.
func looksLikeCallJSON(s string) bool {
	i := 1
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if s[0] == '[' {
		if i >= len(s) || s[i] != '{' {
			return false
		}
		i++
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	return i < len(s) && (s[i] == '"' || s[i] == '\'')
}

// jsonCandidate decodes one bracketed span and records the calls in it. It
// reports whether the span was taken as calls.
func (p *parser) jsonCandidate(o *outcome, c span, trunc bool, f *fence, whole span) bool {
	s := p.text[c.start:c.end]
	if !looksLikeCallJSON(s) {
		return false
	}
	p.charge(16)
	// Explicit: the span is the whole reply, or sits in a JSON-ish fence;
	// then failures are reported to the model.
	explicit := (c.start == whole.start && c.end >= whole.end) || (f != nil && jsonLikeFence(f.lang))
	where := "your JSON tool call"
	hint := FormatJSON
	if f != nil {
		where = "the JSON in your ```" + f.lang + " block"
		hint = FormatJSONFenced
	}
	v, err := p.decodeLenient(s, trunc)
	if err != nil {
		if explicit && p.mentionsCall(s) {
			if !o.full() {
				o.problem("%s %s; %s", where, jsonProblem(s, err), p.hint(hint, ""))
			}
			o.attemptFormat(hint)
		}
		return false
	}
	raws, ok := callsFromValue(v, 0)
	if !ok {
		return false
	}
	for _, rc := range raws {
		if !rc.hasArgs && !(rc.bare && p.tools.offered() && p.tools.lookup(rc.name) >= 0) {
			return false // data that happens to have a "name"
		}
	}
	n := len(o.calls)
	for _, rc := range raws {
		p.addCall(o, rc.name, rc.args, explicit, hint)
	}
	if len(o.calls) == n {
		o.attemptFormat(hint)
		return false
	}
	if n == 0 { // the first calls name the format
		switch {
		case f != nil:
			o.format = FormatJSONFenced
		case raws[0].llama:
			o.format = FormatLlama3
		default:
			o.format = FormatJSON
		}
	}
	o.cuts = append(o.cuts, c)
	return true
}

// attemptFormat names the format of a failed attempt unless one is named.
func (o *outcome) attemptFormat(f string) {
	if o.format == "" {
		o.format = f
	}
}

// mentionsCall reports whether a broken JSON span still reads as a call:
// one of its quoted strings names an offered tool or, with no tools
// offered, is a name key such as "name" or "tool".
func (p *parser) mentionsCall(s string) bool {
	p.charge(len(s))
	for i := 0; i < len(s); i++ {
		q := s[i]
		if q != '"' && q != '\'' {
			continue
		}
		j := i + 1
		for j < len(s) && s[j] != q && s[j] != '\n' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		if j > len(s) {
			j = len(s)
		}
		str := s[i+1 : j]
		if p.tools.offered() {
			if p.tools.lookup(str) >= 0 {
				return true
			}
		} else {
			for _, k := range nameKeys[:4] {
				if str == k {
					return true
				}
			}
		}
		i = j
	}
	return false
}
