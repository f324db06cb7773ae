package toolcall

import "strings"

const (
	glmKey      = "<arg_key>"
	glmKeyEnd   = "</arg_key>"
	glmValue    = "<arg_value>"
	glmValueEnd = "</arg_value>"
)

// parseGLM reads GLM-4.5/4.6 calls:
//
//	<tool_call>NAME
//	<arg_key>K</arg_key>
//	<arg_value>V</arg_value>
//	…</tool_call>
//
// A <tool_call> is GLM's when a tool name follows it directly and then
// <arg_key> or </tool_call>; Hermes JSON bodies are left to parseXML.
// Values are typed by the tool's JSON Schema, as Qwen3-Coder's are.
func (p *parser) parseGLM() *outcome {
	if !p.contains(tagToolCall) {
		return nil
	}
	o := &outcome{}
	text := p.text
	open, close := p.finder(tagToolCall), p.finder(tagToolCallEnd)
	key, keyEnd := p.finder(glmKey), p.finder(glmKeyEnd)
	val, valEnd := p.finder(glmValue), p.finder(glmValueEnd)
	for pos := 0; pos < len(text); {
		a := open.next(pos)
		if a < 0 {
			break
		}
		bodyStart := a + len(tagToolCall)
		end, blockEnd := len(text), len(text)
		if c := close.next(bodyStart); c >= 0 {
			end, blockEnd = c, c+len(tagToolCallEnd)
		}
		if n := open.before(bodyStart, end); n >= 0 {
			end, blockEnd = n, n
		}
		// The name runs to the first '<' or newline.
		nameEnd := bodyStart
		for nameEnd < end && nameEnd-bodyStart < maxTagNameLength && text[nameEnd] != '<' && text[nameEnd] != '\n' {
			nameEnd++
		}
		p.charge(nameEnd - bodyStart)
		name := strings.TrimSpace(text[bodyStart:nameEnd])
		i := p.skipSpace(nameEnd, end)
		if !validName(name) || (i < end && !strings.HasPrefix(text[i:], glmKey)) {
			pos = bodyStart // Hermes JSON, Qwen3-Coder or prose
			continue
		}
		o.attemptFormat(FormatGLM45)
		args := []byte{'{'}
		canon, _ := p.tools.resolve(name)
		ok := true
		for k := key.before(i, end); k >= 0; k = key.before(i, end) {
			ks := k + len(glmKey)
			ke := keyEnd.before(ks, end)
			vs := -1
			if ke >= 0 {
				vs = val.before(ke, end)
			}
			ve := -1
			if vs >= 0 {
				ve = valEnd.before(vs+len(glmValue), end)
			}
			if ve < 0 {
				o.problem("an <arg_key>/<arg_value> pair of your call to %q is not closed; %s", name, p.hint(FormatGLM45, name))
				ok = false
				break
			}
			k := strings.TrimSpace(text[ks:ke])
			v := text[vs+len(glmValue) : ve]
			p.charge(ve - ks)
			var types []string
			if canon != "" {
				types = p.tools.types(canon, k)
			}
			if len(args) > 1 {
				args = append(args, ',')
			}
			args = appendJSONString(args, k)
			args = append(args, ':')
			args = append(args, p.coerce(v, types)...)
			i = ve + len(glmValueEnd)
		}
		if ok {
			if v, err := p.decodeLenient(string(append(args, '}')), false); err == nil {
				if p.addCall(o, name, v, true, FormatGLM45) {
					o.cuts = append(o.cuts, span{a, blockEnd})
				}
			}
		}
		pos = blockEnd
	}
	if len(o.calls) == 0 && len(o.problems) == 0 && len(o.unmatched) == 0 {
		return nil
	}
	return o
}
