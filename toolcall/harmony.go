package toolcall

import (
	"strings"
)

const (
	hStart   = "<|start|>"
	hChannel = "<|channel|>"
	hMessage = "<|message|>"
	hEnd     = "<|end|>"
	hCall    = "<|call|>"
	hReturn  = "<|return|>"
)

// parseHarmony reads gpt-oss "harmony" messages:
//
//	<|channel|>analysis<|message|>thinking<|end|>
//	<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>
//	<|start|>assistant<|channel|>final<|message|>answer<|return|>
//
// A message with a recipient (to=…, in the header before or after the
// channel) is a call; final and commentary text is Content; analysis is
// Reasoning. The recipient's "functions." namespace is dropped.
func (p *parser) parseHarmony() *outcome {
	if !p.contains(hMessage) || (!p.contains(hChannel) && !p.contains(hStart)) {
		return nil
	}
	o := &outcome{format: FormatHarmony}
	text := p.text
	msg := p.finder(hMessage)
	enders := []*finder{p.finder(hEnd), p.finder(hCall), p.finder(hReturn), p.finder(hStart), p.finder(hChannel)}
	consumes := []bool{true, true, true, false, false}
	var content, reasoning []string
	structural := false
	for pos := 0; pos < len(text); {
		m := msg.next(pos)
		if m < 0 {
			content = append(content, text[pos:])
			break
		}
		header := text[pos:m]
		p.charge(len(header))
		hs := strings.Index(header, hStart)
		if c := strings.Index(header, hChannel); c >= 0 && (hs < 0 || c < hs) {
			hs = c
		}
		if hs < 0 && !strings.Contains(header, "to=") {
			// "<|message|>" without a header: leave it as text
			content = append(content, text[pos:m+len(hMessage)])
			pos = m + len(hMessage)
			continue
		}
		if hs > 0 && harmonyRecipientFirst(header[:hs]) {
			// the reply began inside the role header the prompt opened
			// ("<|start|>assistant" is the prompt's): " to=functions.x<|channel|>…"
			hs = 0
		}
		role, channel, recipient := harmonyHeader(header[max(hs, 0):])
		if recipient == "" && role != "assistant" && channel != "analysis" && channel != "commentary" && channel != "final" {
			// prose that happens to contain the tokens
			content = append(content, text[pos:m+len(hMessage)])
			pos = m + len(hMessage)
			continue
		}
		if hs > 0 {
			content = append(content, header[:hs])
		}
		structural = true
		bodyStart := m + len(hMessage)
		bodyEnd, after, atEOF := len(text), len(text), true
		for k, f := range enders {
			if e := f.before(bodyStart, bodyEnd); e >= 0 {
				bodyEnd, after, atEOF = e, e, false
				if consumes[k] {
					after = e + len(f.needle)
				}
			}
		}
		body := text[bodyStart:bodyEnd]
		pos = after
		switch {
		case strings.HasPrefix(role, "functions.") || recipient == "assistant" || recipient == "user" || recipient == "system":
			// a tool's reply echoed back: not the model's words
		case recipient != "":
			name := strings.TrimPrefix(recipient, "functions.")
			args := strings.TrimSpace(body)
			p.charge(len(body))
			if args == "" {
				args = "{}"
			}
			v, err := p.decodeLenient(args, atEOF)
			if err != nil {
				if !o.full() {
					o.problem("the arguments of your call to %q %s; %s", name, jsonProblem(args, err), p.hint(FormatHarmony, name))
				}
				continue
			}
			p.addCall(o, name, v, true, FormatHarmony)
		case channel == "analysis":
			reasoning = append(reasoning, body)
		default:
			content = append(content, body)
		}
	}
	if !structural {
		return nil
	}
	c := joinPieces(content)
	p.charge(len(c))
	o.content = &c
	o.reasoning = joinPieces(reasoning)
	return o
}

// harmonyRecipientFirst reports whether the text before a message's first
// header token is the rest of a role header: "to=NAME", optionally after
// the role ("assistant to=functions.x"), as gpt-oss writes when the
// prompt ends with "<|start|>assistant" (openai-harmony reads the
// recipient from the role header too).
func harmonyRecipientFirst(s string) bool {
	f := strings.Fields(s)
	if len(f) == 2 && f[0] == "assistant" {
		f = f[1:]
	}
	return len(f) == 1 && strings.HasPrefix(f[0], "to=") && len(f[0]) > len("to=")
}

// harmonyHeader reads role, channel and recipient from a message header
// such as "<|start|>assistant<|channel|>commentary to=functions.x <|constrain|>json".
func harmonyHeader(h string) (role, channel, recipient string) {
	word := func(s string) string {
		s = strings.TrimLeft(s, " \t\r\n")
		i := 0
		for i < len(s) && !isSpace(s[i]) && s[i] != '<' {
			i++
		}
		return s[:i]
	}
	if i := strings.Index(h, hStart); i >= 0 {
		role = word(h[i+len(hStart):])
	}
	if i := strings.Index(h, hChannel); i >= 0 {
		channel = word(h[i+len(hChannel):])
	}
	for i := 0; i < len(h); {
		j := strings.Index(h[i:], "to=")
		if j < 0 {
			break
		}
		at := i + j
		if at == 0 || isSpace(h[at-1]) || h[at-1] == '>' {
			recipient = word(h[at+3:])
			break
		}
		i = at + 3
	}
	if strings.HasPrefix(role, "to=") { // "<|start|>to=…" is not a role
		role = ""
	}
	return role, channel, recipient
}
