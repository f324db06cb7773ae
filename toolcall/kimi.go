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
// A call id that is only a counter ("0") names no tool: the call is to the
// one tool offered, or to the only offered tool whose schema declares
// every argument key; when that is ambiguous it is reported, not guessed
// (vLLM's kimi_k2 parser, test_bare_counter*). An id with no NAME ("")
// or with a '.' where the ':' belongs ("functions.x.0") is reported.
// Arguments that are not JSON are reported with the call's name, so the
// correction turn can name the call; the other calls are still taken.
// A call cut off at the end of the reply is decoded with its open braces
// closed when it ends after a complete value; one cut inside a value or
// without an argument marker is reported.
func (p *parser) parseKimi() *outcome {
	argBegin := p.finder(kimiArgBegin)
	return p.markedCalls(callMarkers{kimiSectionBegin, kimiSectionEnd, kimiCallBegin, kimiCallEnd}, func(o *outcome, lo, hi int, atEOF bool) {
		p.kimiCall(o, argBegin, lo, hi, atEOF)
	})
}

// kimiCall reads one call from the body [lo, hi) of a call marker.
func (p *parser) kimiCall(o *outcome, argBegin *finder, lo, hi int, atEOF bool) {
	o.attemptFormat(FormatKimiK2)
	a := argBegin.before(lo, hi)
	if a < 0 {
		o.problem("your tool call has no <|tool_call_argument_begin|> between the call id and the arguments; %s", p.hint(FormatKimiK2, ""))
		return
	}
	id := strings.TrimSpace(p.text[lo:a])
	name := kimiName(id)
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
	if _, counter := parseInt(name); counter {
		inferred, why := p.tools.byArguments(v)
		if inferred == "" {
			o.problem("your call id %q names no tool and %s; %s", truncate(id, 64), why, p.hint(FormatKimiK2, ""))
			return
		}
		name = inferred
	} else if dot := strings.LastIndexByte(name, '.'); dot > 0 && !strings.Contains(id, ":") {
		if _, ok := parseInt(name[dot+1:]); ok {
			o.problem("your call id %q is not in the form functions.NAME:IDX; %s", truncate(id, 64), p.hint(FormatKimiK2, name[:dot]))
			return
		}
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
