package toolcall

import (
	"regexp"
	"strings"
)

// Spellings of the same tags that the reference parsers accept, mapped to
// the one the families read: one linear pass (RE2), run only when the text
// holds a trigger, that never lengthens the text.
var (
	// <function name="NAME"> (llama.cpp's Hermes parser) and
	// <parameter = NAME>, <parameter name="NAME"> (Qwen3-Coder variants
	// vLLM's qwen3xml parser reads) become <function=NAME>/<parameter=NAME>.
	xmlAttrTag = regexp.MustCompile(`<(function|parameter)(?:\s*=\s*|\s+name\s*=\s*)["']?([^"'<>\n=]+?)["']?\s*>`)
)

// normalize rewrites the variant spellings above.
func (p *parser) normalize() {
	if strings.Contains(p.text, "<function") || strings.Contains(p.text, "<parameter") {
		p.charge(2 * len(p.text))
		p.text = xmlAttrTag.ReplaceAllString(p.text, "<$1=$2>")
	}
}
