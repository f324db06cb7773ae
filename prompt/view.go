package prompt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentloop/agentloop/internal/memo"
)

// TemplateData is what the system prompt templates see. Template authors:
// these are the fields and methods available.
type TemplateData struct {
	Mode          Mode
	Tools         []Tool
	Workspace     WorkspaceInfo
	Marker        string
	MaxIterations int
	Instructions  string
}

// Tool is one tool as listed in a prompt.
type Tool struct {
	Name string
	// Description is the first sentence of the tool's description.
	Description string
	// Args summarises the arguments: "path, start_line?: integer".
	// A "?" marks an optional argument; the type is left out for strings.
	Args string
}

// Has reports whether a tool of that name is offered.
func (d TemplateData) Has(name string) bool {
	return slices.ContainsFunc(d.Tools, func(t Tool) bool { return t.Name == name })
}

// First returns the first of names that is offered, or "".
func (d TemplateData) First(names ...string) string {
	for _, n := range names {
		if d.Has(n) {
			return n
		}
	}
	return ""
}

func newView(d Data) (TemplateData, error) {
	v := TemplateData{
		Mode:          d.Mode,
		Workspace:     d.Workspace,
		Marker:        strings.TrimSpace(d.Marker),
		MaxIterations: d.MaxIterations,
		Instructions:  strings.TrimSpace(d.Instructions),
	}
	switch v.Mode {
	case "":
		v.Mode = ModeTools
	case ModeTools, ModeSelfReasoning, ModeSingleShot:
	default:
		return v, fmt.Errorf("prompt: unknown mode %q (want %q, %q or %q)", d.Mode, ModeTools, ModeSelfReasoning, ModeSingleShot)
	}
	if v.Marker == "" {
		v.Marker = DefaultMarker
	}
	if v.Mode == ModeSingleShot {
		return v, nil // no tools in a single call
	}
	for _, t := range d.Tools {
		if t.Name == "" {
			return v, fmt.Errorf("prompt: a tool has no name (description %q)", firstSentence(t.Description))
		}
		v.Tools = append(v.Tools, Tool{Name: t.Name, Description: firstSentence(t.Description), Args: argSummary(t.Parameters)})
	}
	return v, nil
}

const maxDescription = 160

// firstSentence keeps a description to its first sentence (or line), at
// most maxDescription characters; the full description still reaches the
// model with the tool's schema.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	// A sentence ends at ". " before a capital letter ("e.g. main.go" goes on).
	for i := 0; ; {
		j := strings.Index(s[i:], ". ")
		if j < 0 {
			break
		}
		i += j + 2
		if r, _ := utf8.DecodeRuneInString(s[i:]); unicode.IsUpper(r) {
			s = s[:i-1]
			break
		}
	}
	if utf8.RuneCountInString(s) > maxDescription {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:maxDescription-1])) + "…"
	}
	return s
}

// schema is the part of a JSON Schema the summary reads.
type schema struct {
	Type       any                `json:"type"` // string or []string
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
	Enum       []any              `json:"enum"`
	Items      *schema            `json:"items"`
}

// argSummary renders an object schema's properties compactly, required
// ones first in the order the schema lists them (JSON object order).
func argSummary(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	s, _ := argSummaries.Get(string(raw), func() (string, error) { return summarizeArgs(raw), nil })
	return s
}

// argSummaries keeps the summaries of the schemas seen: every session's
// prompt lists its tools, mostly the same ones with the same schemas.
var argSummaries = memo.New[string](1024)

func summarizeArgs(raw json.RawMessage) string {
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil || len(s.Properties) == 0 {
		return ""
	}
	names := propertyOrder(raw)
	var req, opt []string
	for _, n := range names {
		p := s.Properties[n]
		if p == nil {
			continue
		}
		if slices.Contains(s.Required, n) {
			req = append(req, argText(n, "", p))
		} else {
			opt = append(opt, argText(n, "?", p))
		}
	}
	return strings.Join(append(req, opt...), ", ")
}

func argText(name, mark string, p *schema) string {
	t := typeText(p)
	if t == "" || t == "string" {
		return name + mark
	}
	return name + mark + ": " + t
}

func typeText(p *schema) string {
	if len(p.Enum) > 0 && len(p.Enum) <= 5 {
		vals := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			b, _ := json.Marshal(e)
			vals[i] = string(b)
		}
		return strings.Join(vals, "|")
	}
	var t string
	switch v := p.Type.(type) {
	case string:
		t = v
	case []any: // ["string", "null"]
		for _, x := range v {
			if s, ok := x.(string); ok && s != "null" {
				t = s
				break
			}
		}
	}
	if t == "array" && p.Items != nil {
		if it := typeText(p.Items); it != "" && !strings.Contains(it, "|") {
			return "[]" + it
		}
	}
	return t
}

// propertyOrder returns the keys of the schema's "properties" object in
// the order they appear in the JSON, which Go maps lose.
func propertyOrder(raw json.RawMessage) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(top["properties"])))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return names
		}
		name, _ := tok.(string)
		names = append(names, name)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return names
		}
	}
	return names
}
