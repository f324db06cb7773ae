package toolcall

import (
	"strings"
)

const (
	dsCallsBegin = "<｜tool▁calls▁begin｜>"
	dsCallsEnd   = "<｜tool▁calls▁end｜>"
	dsCallBegin  = "<｜tool▁call▁begin｜>"
	dsCallEnd    = "<｜tool▁call▁end｜>"
	dsSep        = "<｜tool▁sep｜>"
)

// parseDeepSeek reads DeepSeek's marker-delimited calls, V3 (and R1):
//
//	<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>
//
// and V3.1:
//
//	<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>
//
// usually wrapped in <｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>.
//
// The same markers with ASCII bars (as Ollama's DeepSeek template and
// tools/tools_test.go write them) are read when the reply uses those, and
// so is R1's <｜tool▁calls｜> opening a call directly (llama.cpp's
// common/chat.cpp accepts it).
func (p *parser) parseDeepSeek() *outcome {
	m, sepTag := callMarkers{dsCallsBegin, dsCallsEnd, dsCallBegin, dsCallEnd}, dsSep
	switch {
	case p.contains(dsCallBegin):
	case p.contains(dsASCIICallBegin):
		m, sepTag = callMarkers{"<|tool▁calls▁begin|>", "<|tool▁calls▁end|>", dsASCIICallBegin, "<|tool▁call▁end|>"}, "<|tool▁sep|>"
	case p.contains(dsR1Calls):
		m = callMarkers{dsR1Calls, dsCallsEnd, dsR1Calls, dsCallEnd}
	}
	sep := p.finder(sepTag)
	return p.markedCalls(m, func(o *outcome, lo, hi int, atEOF bool) {
		p.deepseekCall(o, sep, sepTag, lo, hi, atEOF)
	})
}

const (
	dsASCIICallBegin = "<|tool▁call▁begin|>"
	dsR1Calls        = "<｜tool▁calls｜>"
)

// callMarkers are the special tokens of a family that writes each call
// between begin and end markers, the calls inside an optional section.
type callMarkers struct{ sectionBegin, sectionEnd, callBegin, callEnd string }

// markedCalls walks every run of calls delimited by m, passing the body
// [lo, hi) of each call to read (atEOF: the reply ended inside it), and
// cuts the runs, with their section markers, out of the content. A call
// without its end marker ends at the next call, the section's end or the
// end of the reply.
func (p *parser) markedCalls(m callMarkers, read func(o *outcome, lo, hi int, atEOF bool)) *outcome {
	if !p.contains(m.callBegin) {
		return nil
	}
	o := &outcome{}
	text := p.text
	begin, end := p.finder(m.callBegin), p.finder(m.callEnd)
	secBegin, secEnd := p.finder(m.sectionBegin), p.finder(m.sectionEnd)
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
		for strings.HasPrefix(text[i:], m.callBegin) {
			bodyStart := i + len(m.callBegin)
			bodyEnd, after := len(text), len(text)
			if e := end.next(bodyStart); e >= 0 {
				bodyEnd, after = e, e+len(m.callEnd)
			}
			if nb := begin.before(bodyStart, bodyEnd); nb >= 0 {
				bodyEnd, after = nb, nb
			}
			if se := secEnd.before(bodyStart, bodyEnd); se >= 0 {
				bodyEnd, after = se, se
			}
			read(o, bodyStart, bodyEnd, after == len(text))
			i = p.skipSpace(after, len(text))
		}
		if strings.HasPrefix(text[i:], m.sectionEnd) {
			i += len(m.sectionEnd)
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

// deepseekCall reads one call from the body [lo, hi) of a call marker.
func (p *parser) deepseekCall(o *outcome, sep *finder, sepTag string, lo, hi int, atEOF bool) {
	text := p.text
	s := sep.before(lo, hi)
	if s < 0 {
		o.attemptFormat(FormatDeepSeekV31)
		o.problem("your tool call has no <｜tool▁sep｜> between the tool name and the arguments; %s", p.hint(FormatDeepSeekV31, ""))
		return
	}
	head := strings.TrimSpace(text[lo:s])
	rest := strings.TrimSpace(text[s+len(sepTag) : hi])
	p.charge(hi - lo)
	format, name, args := FormatDeepSeekV31, head, rest
	if head == "function" && !strings.HasPrefix(rest, "{") {
		// V3: the name is on the first line, the JSON (usually fenced) after it.
		format = FormatDeepSeekV3
		name, args = rest, ""
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			name, args = strings.TrimSpace(rest[:nl]), strings.TrimSpace(rest[nl+1:])
		} else if f := strings.Index(rest, "```"); f >= 0 {
			name, args = strings.TrimSpace(rest[:f]), rest[f:]
		}
	}
	o.attemptFormat(format)
	args = stripFence(args)
	if args == "" {
		args = "{}"
	}
	v, err := p.decodeLenient(args, atEOF)
	if err != nil {
		if !o.full() {
			o.problem("the arguments of your call to %q %s; %s", name, jsonProblem(args, err), p.hint(format, name))
		}
		return
	}
	p.addCall(o, name, v, true, format)
}

// stripFence removes a ```json … ``` fence around s.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = s[3:]
	i := 0
	for i < len(s) && isIdentByte(s[i]) {
		i++
	}
	s = s[i:]
	if j := strings.LastIndex(s, "```"); j >= 0 {
		s = s[:j]
	}
	return strings.TrimSpace(s)
}
