package toolcall

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// propTypes maps an argument name to the JSON Schema types it accepts.
type propTypes map[string][]string

// parseSchema reads the little of a JSON Schema that coercion needs: the
// type (or types, or the types of anyOf/oneOf branches) of each top-level
// property. Anything it does not understand yields no types, which keeps
// values as strings.
func parseSchema(raw json.RawMessage) propTypes {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return nil
	}
	pt := make(propTypes, len(s.Properties))
	for name, prop := range s.Properties {
		pt[name] = schemaTypes(prop, 0)
	}
	return pt
}

func schemaTypes(raw json.RawMessage, depth int) []string {
	var s struct {
		Type  json.RawMessage   `json:"type"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
	}
	if depth > 4 || json.Unmarshal(raw, &s) != nil {
		return nil
	}
	var types []string
	var one string
	var many []string
	if json.Unmarshal(s.Type, &one) == nil && one != "" {
		types = append(types, one)
	} else if json.Unmarshal(s.Type, &many) == nil {
		types = append(types, many...)
	}
	for _, branch := range append(s.AnyOf, s.OneOf...) {
		types = append(types, schemaTypes(branch, depth+1)...)
	}
	return types
}

func hasType(types []string, t string) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// coerce converts an untyped argument value (Qwen3-Coder XML parameters)
// to JSON following the declared types: "3" becomes 3 for integer and
// number, "true" becomes true for boolean, JSON (or Python-literal) text is
// parsed for object and array, "null" becomes null where allowed. A value
// that fits none of the declared types, or an argument with no declared
// type, stays a string, for schema validation to report.
func (p *parser) coerce(raw string, types []string) []byte {
	str := appendJSONString(nil, raw)
	if len(types) == 0 {
		return str
	}
	for _, t := range types {
		if vllmType(t) == "string" {
			return str
		}
	}
	v := strings.TrimSpace(raw)
	p.charge(len(raw))
	if v == "null" || v == "None" {
		return []byte("null")
	}
	for _, t := range types {
		switch vllmType(t) {
		case "integer":
			if n, ok := intText(v); ok {
				return []byte(n)
			}
		case "number":
			if n, ok := numberText(v); ok {
				// vLLM's Qwen3-Coder parser returns an integral float
				// as an int: "2.0" is 2.
				if i, ok := intText(n); ok && strings.ContainsAny(n, ".eE") {
					return []byte(i)
				}
				return []byte(n)
			}
		case "boolean":
			switch strings.ToLower(v) {
			case "true":
				return []byte("true")
			case "false":
				return []byte("false")
			}
		case "object", "array":
			want := byte('{')
			if t == "array" {
				want = '['
			}
			if v == "" || v[0] != want {
				continue
			}
			if out, err := p.decodeLenient(v, false); err == nil && len(out) > 0 && out[0] == want {
				return out
			}
		}
	}
	return str
}

// vllmType maps the type names vLLM's Qwen3-Coder parser accepts besides
// JSON Schema's (_convert_param_value: int…, uint…, long, short,
// unsigned, num…, float…, bool, binary, dict…, list…, arr) to the JSON
// Schema name.
func vllmType(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	switch {
	case t == "integer" || t == "number" || t == "boolean" || t == "object" || t == "array" || t == "null" || t == "string":
		return t
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "long"), strings.HasPrefix(t, "short"), strings.HasPrefix(t, "unsigned"):
		return "integer"
	case strings.HasPrefix(t, "num"), strings.HasPrefix(t, "float"), t == "double", t == "decimal":
		return "number"
	case t == "bool" || t == "binary":
		return "boolean"
	case t == "str" || t == "text" || t == "varchar" || t == "char" || t == "enum":
		return "string"
	case strings.HasPrefix(t, "dict"):
		return "object"
	case strings.HasPrefix(t, "list"), t == "arr":
		return "array"
	}
	return t
}

// intText returns v as a JSON integer when it is one (also "3.0").
func intText(v string) (string, bool) {
	if isJSONNumber(v) && !strings.ContainsAny(v, ".eE") {
		return v, true
	}
	if n, ok := parseInt(v); ok {
		return strconv.FormatInt(n, 10), true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10), true
	}
	return "", false
}

// numberText returns v as a JSON number when it is one.
func numberText(v string) (string, bool) {
	if isJSONNumber(v) {
		return v, true
	}
	return pyNumber(v)
}

// pyNumber converts a Python-style number (+1, .5, 1_000, 0x1f) to JSON.
func pyNumber(v string) (string, bool) {
	v = strings.TrimPrefix(v, "+")
	if isJSONNumber(v) {
		return v, true
	}
	if n, ok := parseInt(v); ok {
		return strconv.FormatInt(n, 10), true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	return strconv.FormatFloat(f, 'g', -1, 64), true
}

// isJSONNumber reports whether s is exactly one JSON number.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i >= len(s) {
		return false
	}
	switch {
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, r := range s { // ranging replaces invalid UTF-8 with U+FFFD
		switch {
		case r == '"':
			dst = append(dst, '\\', '"')
		case r == '\\':
			dst = append(dst, '\\', '\\')
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return append(dst, '"')
}

// parseInt reads a decimal integer, or a Python 0x/0o/0b one; "010" is ten.
func parseInt(v string) (int64, bool) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, true
	}
	u := strings.TrimLeft(v, "+-")
	if len(u) > 1 && u[0] == '0' && strings.ContainsRune("xXoObB", rune(u[1])) {
		if n, err := strconv.ParseInt(v, 0, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}
