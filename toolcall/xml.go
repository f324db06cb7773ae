package toolcall

import (
	"strings"
)

const (
	tagToolCall      = "<tool_call>"
	tagToolCallEnd   = "</tool_call>"
	tagFunction      = "<function="
	tagFunctionEnd   = "</function>"
	tagParameter     = "<parameter="
	tagParameterEnd  = "</parameter>"
	maxTagNameLength = 256
)

// xmlParser holds the finders of one parseXML run; every finder is asked
// with non-decreasing positions.
type xmlParser struct {
	*parser
	o                                 *outcome
	open, close, fn, fnEnd, par, pEnd *finder
	// noFnCloserFrom: no </function> at or after this offset closes a
	// function (see functionEnd); len(text)+1 until one search fails.
	noFnCloserFrom int
	// stale are empty <tool_call> blocks and stray closers.
	stale []span
}

// parseXML finds Hermes <tool_call>{json}</tool_call> blocks and
// Qwen3-Coder <function=NAME><parameter=K>v</parameter></function> calls,
// with or without the <tool_call> wrapper. A tag followed by anything else
// is prose that mentions it.
func (p *parser) parseXML() *outcome {
	if !p.contains(tagToolCall) && !p.contains(tagFunction) {
		return nil
	}
	x := &xmlParser{
		parser: p, o: &outcome{},
		open: p.finder(tagToolCall), close: p.finder(tagToolCallEnd),
		fn: p.finder(tagFunction), fnEnd: p.finder(tagFunctionEnd),
		par: p.finder(tagParameter), pEnd: p.finder(tagParameterEnd),
		noFnCloserFrom: len(p.text) + 1,
	}
	text := p.text
	for pos := 0; pos < len(text); {
		a := x.open.next(pos)
		b := x.fn.next(pos)
		if a < 0 && b < 0 {
			break
		}
		if a >= 0 && (b < 0 || a < b) {
			pos = x.toolCallBlock(a)
			continue
		}
		// a bare <function=…> outside any <tool_call>
		n := len(x.o.calls)
		end, ok := x.functions(b, len(text), false)
		if !ok {
			pos = b + len(tagFunction)
			continue
		}
		if len(x.o.calls) > n {
			x.o.cuts = append(x.o.cuts, span{b, end})
		}
		pos = end
	}
	if len(x.o.calls) == 0 && len(x.o.problems) == 0 && len(x.o.unmatched) == 0 {
		return nil
	}
	if len(x.o.calls) > 0 {
		// a </tool_call> opening the reply closes nothing: stale too
		if j := x.skipSpace(0, len(text)); strings.HasPrefix(text[j:], tagToolCallEnd) {
			x.stale = append(x.stale, span{j, j + len(tagToolCallEnd)})
		}
		x.o.cuts = append(x.o.cuts, x.stale...)
	}
	return x.o
}

// toolCallBlock handles the <tool_call> at a and returns where to go on.
func (x *xmlParser) toolCallBlock(a int) int {
	text := x.text
	bodyStart := a + len(tagToolCall)
	// The body ends at </tool_call>, at the next <tool_call> (this one was
	// left open) or at the end of the reply.
	end, blockEnd := len(text), len(text)
	if c := x.close.next(bodyStart); c >= 0 {
		end, blockEnd = c, c+len(tagToolCallEnd)
	}
	if n := x.open.next(bodyStart); n >= 0 && n < end {
		end, blockEnd = n, n
	}
	i := x.skipSpace(bodyStart, end)
	n := len(x.o.calls)
	switch {
	case i < end && (text[i] == '{' || text[i] == '['):
		x.hermesBody(i, end)
	case strings.HasPrefix(text[i:end], tagFunction):
		if _, ok := x.functions(i, end, true); !ok {
			return bodyStart
		}
	case i >= end:
		// an empty block: a stale tag left by the stream (Content loses
		// it when the reply holds calls)
		x.stale = append(x.stale, span{a, blockEnd})
		return blockEnd
	default:
		return bodyStart // prose mentioning the tag
	}
	if len(x.o.calls) > n { // failed attempts stay in Content
		x.o.cuts = append(x.o.cuts, span{a, blockEnd})
	}
	return blockEnd
}

// hermesBody decodes the JSON call(s) in [i, end).
func (x *xmlParser) hermesBody(i, end int) {
	text := x.text
	o := x.o
	for i < end && (text[i] == '{' || text[i] == '[') {
		e, closed := x.jsonExtent(i, end)
		body := text[i:e]
		v, err := x.decodeLenient(body, !closed)
		if err != nil {
			if !o.full() {
				o.problem("your <tool_call> block %s; %s", jsonProblem(body, err), x.hint(FormatHermes, ""))
			}
			o.attemptFormat(FormatHermes)
			return
		}
		raws, ok := callsFromValue(v, 0)
		if !ok {
			o.problem(`your <tool_call> block holds JSON without a tool name; %s`, x.hint(FormatHermes, ""))
			o.attemptFormat(FormatHermes)
			return
		}
		for _, rc := range raws {
			x.addCall(o, rc.name, rc.args, true, FormatHermes)
		}
		o.attemptFormat(FormatHermes)
		j := e
		for j < end && (isSpace(text[j]) || text[j] == ',' || text[j] == ';') {
			j++
		}
		x.charge(j - e)
		i = j
	}
	if rest := strings.TrimSpace(text[i:end]); rest != "" && len(o.calls) == 0 && len(o.problems) == 0 {
		o.problem("your <tool_call> block has text after the JSON (%q); %s", truncate(rest, 40), x.hint(FormatHermes, ""))
	}
	x.charge(end - i)
}

// functions parses consecutive <function=NAME>…</function> calls starting
// at i (which holds "<function=") and ending by limit. It returns the end
// of what it consumed; ok is false when the first tag is not a call
// (prose), in which case nothing was recorded.
func (x *xmlParser) functions(i, limit int, inBlock bool) (int, bool) {
	text := x.text
	o := x.o
	first := true
	for i < limit && strings.HasPrefix(text[i:], tagFunction) {
		nameStart := i + len(tagFunction)
		gt := x.tagEnd(nameStart, limit, maxTagNameLength)
		if gt < 0 {
			if first && !inBlock {
				return 0, false
			}
			o.problem("a <function= tag is not closed with '>' after the tool name; %s", x.hint(FormatQwen3Coder, ""))
			o.attemptFormat(FormatQwen3Coder)
			return limit, true
		}
		name := strings.TrimSpace(strings.Trim(text[nameStart:gt], `"'`))
		bodyStart := gt + 1
		// The function ends at </function>, the next <function= or limit.
		fend, next := limit, limit
		if c := x.functionEnd(bodyStart, limit); c >= 0 {
			fend, next = c, c+len(tagFunctionEnd)
		}
		if n := x.fn.before(bodyStart, fend); n >= 0 {
			fend, next = n, n
		}
		j := x.skipSpace(bodyStart, fend)
		isJSON := j < fend && text[j] == '{'
		if first && !inBlock && j < fend && !isJSON && !strings.HasPrefix(text[j:], tagParameter) {
			return 0, false // "<function=x>" in prose
		}
		var args []byte
		if isJSON {
			// <function=NAME>{json}</function>, as Llama 3.1 writes it
			body := strings.TrimSpace(text[j:fend])
			if e, closed := x.jsonExtent(j, fend); closed && strings.HasPrefix(tagFunctionEnd, strings.TrimSpace(text[e:fend])) {
				// the object, then at most the start of </function>: a
				// stream cut inside the closing tag (llama.cpp's
				// Functionary v3.1 parser takes the call)
				body = text[j:e]
			}
			v, err := x.decodeLenient(body, true)
			if err != nil {
				if !o.full() {
					o.problem("the arguments of your call to %q %s; %s", name, jsonProblem(body, err), x.hint(FormatQwen3Coder, name))
				}
				o.attemptFormat(FormatQwen3Coder)
				return limit, true
			}
			args = v
		} else {
			var ok bool
			if args, ok = x.parameters(name, j, fend, fend == len(text)); !ok {
				return limit, true
			}
		}
		x.addCall(o, name, args, true, FormatQwen3Coder)
		o.attemptFormat(FormatQwen3Coder)
		first = false
		i = x.skipSpace(next, limit)
	}
	return i, true
}

// parameters reads <parameter=K>v</parameter>… in [i, end) into a JSON
// object, coercing values by the tool's schema. cut says the reply ended
// inside this function (no </function>): a value left open then is a
// truncated stream, reported rather than guessed.
func (x *xmlParser) parameters(tool string, i, end int, cut bool) ([]byte, bool) {
	text := x.text
	noCloserFrom := end + 1
	canon, _ := x.tools.resolve(tool)
	args := []byte{'{'}
	index := map[string]int{} // key -> position in keys, for repeated keys
	type kv struct {
		k string
		v []byte
	}
	var kvs []kv
	for {
		pstart := x.par.before(i, end)
		if pstart < 0 {
			break
		}
		keyStart := pstart + len(tagParameter)
		gt := x.tagEnd(keyStart, end, maxTagNameLength)
		if gt < 0 {
			x.o.problem("a <parameter= tag of your call to %q is not closed with '>' after the parameter name; %s", tool, x.hint(FormatQwen3Coder, tool))
			x.o.attemptFormat(FormatQwen3Coder)
			return nil, false
		}
		key := strings.TrimSpace(strings.Trim(text[keyStart:gt], `"'`))
		vstart := gt + 1
		// A value ends at a </parameter> followed by the next <parameter=,
		// </function>, </tool_call> or the end of the call: a literal
		// </parameter> or <parameter=x> inside the value stays in it.
		vend, next := -1, -1
		// A <parameter= on a line of its own before any </parameter> is
		// the next parameter of a value whose closing tag the model left
		// out (vLLM's parameter regex ends a value at <parameter=).
		if n := x.par.before(vstart, end); n >= 0 && x.lineStartBefore(n) {
			if c := x.pEnd.before(vstart, end); c < 0 || n < c {
				vend, next = n, n
			}
		}
		if vend < 0 && vstart < noCloserFrom {
			for c := x.pEnd.before(vstart, end); c >= 0; c = x.pEnd.before(c+len(tagParameterEnd), end) {
				if x.endsValue(c+len(tagParameterEnd), end) {
					vend, next = c, c+len(tagParameterEnd)
					break
				}
			}
			if vend < 0 {
				noCloserFrom = vstart // no closer ends a value after here
			}
		}
		if vend < 0 {
			// unclosed: up to the next parameter, or the end of the call
			vend, next = end, end
			if n := x.par.before(vstart, end); n >= 0 {
				vend, next = n, n
			} else if cut {
				x.o.problem("your call to %q was cut off inside the value of parameter %q; write the whole call again, %s", tool, key, x.hint(FormatQwen3Coder, tool))
				x.o.attemptFormat(FormatQwen3Coder)
				return nil, false
			}
		}
		val := text[vstart:vend]
		x.charge(vend - vstart)
		// Qwen3-Coder puts the value on its own lines: drop one leading
		// and one trailing newline, keep everything else.
		val = strings.TrimPrefix(val, "\n")
		val = strings.TrimSuffix(val, "\n")
		var types []string
		if canon != "" {
			types = x.tools.types(canon, key)
		}
		v := x.coerce(val, types)
		if at, dup := index[key]; dup {
			kvs[at].v = v
		} else {
			index[key] = len(kvs)
			kvs = append(kvs, kv{key, v})
		}
		i = next
	}
	for n, e := range kvs {
		if n > 0 {
			args = append(args, ',')
		}
		args = appendJSONString(args, e.k)
		args = append(args, ':')
		args = append(args, e.v...)
	}
	return append(args, '}'), true
}

// functionEnd finds the </function> that closes a function whose body
// starts at i: the first one right after a </parameter> (or the body's
// opening '>' or a JSON object's '}'), or followed by </tool_call>, the
// next <tool_call> or <function=, or the end of limit. A </function> inside
// a value (code that prints the tag) closes nothing. When none qualifies,
// the first </function> does, as in vLLM's function regex. It returns -1
// when there is no </function> before limit.
func (x *xmlParser) functionEnd(i, limit int) int {
	first := x.fnEnd.before(i, limit)
	if first < 0 || i >= x.noFnCloserFrom {
		return first
	}
	for c := first; c >= 0; c = x.fnEnd.before(c+len(tagFunctionEnd), limit) {
		if x.closesFunction(i, c, limit) {
			return c
		}
	}
	x.noFnCloserFrom = i
	return first
}

// closesFunction applies functionEnd's rule to the </function> at c.
func (x *xmlParser) closesFunction(bodyStart, c, limit int) bool {
	text := x.text
	b := c
	for b > bodyStart && isSpace(text[b-1]) {
		b--
	}
	x.charge(c - b)
	before := text[bodyStart:b]
	if b == bodyStart || strings.HasSuffix(before, tagParameterEnd) || strings.HasSuffix(before, "}") {
		return true
	}
	j := x.skipSpace(c+len(tagFunctionEnd), limit)
	rest := text[j:limit]
	return j >= limit || strings.HasPrefix(rest, tagToolCallEnd) || strings.HasPrefix(rest, tagToolCall) || strings.HasPrefix(rest, tagFunction)
}

// tagEnd finds the '>' closing a tag name that starts at i: within max
// bytes, before limit, and before any '<' or newline (which a name cannot
// hold). It returns -1 when there is none.
func (x *xmlParser) tagEnd(i, limit, max int) int {
	stop := min(limit, i+max)
	for j := i; j < stop; j++ {
		switch x.text[j] {
		case '>':
			x.charge(j + 1 - i)
			return j
		case '<', '\n':
			x.charge(j + 1 - i)
			return -1
		}
	}
	x.charge(stop - i)
	return -1
}

// endsValue reports whether a </parameter> whose end is at i closes a
// value: what follows (after spaces) is another parameter, the end of the
// function or block, or the end of the call.
func (x *xmlParser) endsValue(i, end int) bool {
	j := x.skipSpace(i, end)
	rest := x.text[j:end]
	return j >= end || strings.HasPrefix(rest, tagParameter) || strings.HasPrefix(rest, tagFunctionEnd) || strings.HasPrefix(rest, tagToolCallEnd)
}
