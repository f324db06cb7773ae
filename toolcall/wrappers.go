package toolcall

import "strings"

// Formats whose calls are JSON behind a family's own marker. The JSON
// families find the calls; wrap then claims the markers around them, so
// they leave Content and the family is named.
const (
	FormatGranite   = "granite"   // <|tool_call|>[{…}] (Granite 3.x; Phi-4-mini closes it with <|/tool_call|>)
	FormatJamba     = "jamba"     // <tool_calls>[{…}]</tool_calls>
	FormatInternLM2 = "internlm2" // <|action_start|><|plugin|>\n{…}<|action_end|>
	FormatPhi4Mini  = "phi4_mini" // functools[{…}]
)

// wrapper is a marker pair that may surround a JSON call; format is the
// family it names ("" keeps the format found).
// closedFormat, when set, is the family if the closing marker is there.
type wrapper struct{ open, close, format, closedFormat string }

var wrappers = []wrapper{
	{"<|action_start|><|plugin|>", "<|action_end|>", FormatInternLM2, ""},
	{"<|tool_call|>", "<|/tool_call|>", FormatGranite, FormatPhi4Mini},
	{"functools", "", FormatPhi4Mini, ""},
	{"<tool_calls>", "</tool_calls>", FormatJamba, ""},
	{"<tools>", "</tools>", "", ""},
	{"<response>", "</response>", "", ""},
	{"<tool_call>", "</tool_call>", "", ""},
	// a fence around a marked call, its closing fence maybe cut off
	// (llama.cpp's Hermes parser reads ```xml and ```json blocks)
	{"```xml", "```", "", ""},
	{"```json", "```", "", ""},
	{"```", "```", "", ""},
}

// maxWrapGap bounds the spaces looked at between a marker and its call.
const maxWrapGap = 64

// wrap widens each cut of a JSON-family outcome over the wrapper markers
// directly around it (only spaces between), innermost first, and names the
// family of the first marker that does. Cuts stay sorted and disjoint.
func (p *parser) wrap(o *outcome) {
	text := p.text
	named := false
	prevEnd := 0
	for n := range o.cuts {
		c := &o.cuts[n]
		for changed := true; changed; {
			changed = false
			lo := p.skipSpaceBack(c.start, max(prevEnd, c.start-maxWrapGap))
			for _, w := range wrappers {
				if lo-len(w.open) < prevEnd || !strings.HasPrefix(text[lo-len(w.open):], w.open) {
					continue
				}
				hi, format := c.end, w.format
				if w.close != "" {
					j := p.skipSpace(c.end, min(len(text), c.end+maxWrapGap))
					if strings.HasPrefix(text[j:], w.close) {
						hi = j + len(w.close)
						if w.closedFormat != "" {
							format = w.closedFormat
						}
					}
				}
				c.start, c.end = lo-len(w.open), hi
				if format != "" && !named {
					o.format, named = format, true
				}
				changed = true
				break
			}
		}
		// A closer alone after the call (Phi-4-mini's <|/tool_call|>).
		if n+1 == len(o.cuts) || o.cuts[n+1].start > c.end {
			j := p.skipSpace(c.end, min(len(text), c.end+maxWrapGap))
			for _, w := range wrappers {
				if w.close != "" && strings.HasPrefix(text[j:], w.close) && (n+1 == len(o.cuts) || j+len(w.close) <= o.cuts[n+1].start) {
					c.end = j + len(w.close)
					break
				}
			}
		}
		prevEnd = c.end
	}
}

// skipSpaceBack returns the start of the spaces that end at i, looking no
// further back than floor.
func (p *parser) skipSpaceBack(i, floor int) int {
	j := i
	for j > floor && isSpace(p.text[j-1]) {
		j--
	}
	p.charge(i - j)
	return j
}

// textBeforeBareCall applies Ollama's template rule (Options.CallPrefix):
// it reports whether o's calls are bare JSON, with no marker of their own,
// and text comes before the first of them.
func (p *parser) textBeforeBareCall(o *outcome) bool {
	if p.callPrefix == "" || len(o.cuts) == 0 || o.prefixed {
		return false
	}
	switch o.format {
	case FormatJSON, FormatJSONFenced, FormatLlama3:
	default:
		return false
	}
	first := o.cuts[0]
	for _, c := range o.cuts {
		first.start = min(first.start, c.start)
	}
	p.charge(first.start)
	return strings.TrimSpace(p.text[:first.start]) != ""
}

// parsePrefixed reads JSON calls behind Options.CallPrefix when no family
// knows the prefix ("Action: ```json", "functools[" and whatever else a
// model's template writes before its calls): Ollama's tools parser takes
// the JSON object or list after the tag the template puts first in its
// .ToolCalls block. The prefix, the JSON and a closing fence or tag leave
// Content.
func (p *parser) parsePrefixed() *outcome {
	pre := p.callPrefix
	if pre == "" || pre == "{" || pre == "[" || !p.contains(pre) {
		return nil
	}
	text := p.text
	o := &outcome{prefixed: true}
	f := p.finder(pre)
	for pos := 0; pos < len(text); {
		m := f.next(pos)
		if m < 0 {
			break
		}
		i := p.skipSpace(m+len(pre), len(text))
		// A prefix ending in '[' or '{' ("functools[") opens the JSON.
		if last := pre[len(pre)-1]; last == '[' || last == '{' {
			i = m + len(pre) - 1
		}
		if i >= len(text) || (text[i] != '{' && text[i] != '[') {
			pos = m + len(pre)
			continue
		}
		e, closed := p.jsonExtent(i, len(text))
		body := text[i:e]
		o.attemptFormat(FormatJSON)
		v, err := p.decodeLenient(body, !closed)
		if err != nil {
			if !o.full() {
				o.problem("the JSON after %q %s; %s", pre, jsonProblem(body, err), p.hint(FormatJSON, ""))
			}
			pos = e
			continue
		}
		raws, ok := callsFromValue(v, 0)
		n := len(o.calls)
		if ok {
			for _, rc := range raws {
				p.addCall(o, rc.name, rc.args, true, FormatJSON)
			}
		}
		end := e
		j := p.skipSpace(e, len(text))
		closer := ""
		switch {
		case strings.HasPrefix(text[j:], "```"):
			closer = "```"
		case pre[0] == '<' && len(pre) > 1:
			closer = "</" + pre[1:]
		}
		if closer != "" && strings.HasPrefix(text[j:], closer) {
			end = j + len(closer)
		}
		if len(o.calls) > n {
			o.cuts = append(o.cuts, span{m, end})
		}
		pos = end
	}
	if len(o.calls) == 0 && len(o.problems) == 0 && len(o.unmatched) == 0 {
		return nil
	}
	return o
}
