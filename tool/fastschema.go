package tool

import (
	"encoding/json"
	"math"
	"unicode/utf8"
)

// fastSchema validates the subset of JSON Schema that tool argument schemas
// almost always use, without allocating. It only ever answers "valid": an
// instance it rejects is re-checked by the full validator, which also
// writes the error message, so the two can never disagree on a call that
// reaches a tool.
type fastSchema struct {
	types      typeSet
	properties map[string]*fastSchema
	required   []string
	noExtra    bool // additionalProperties: false
	items      *fastSchema
	enum       []any
	minimum    *float64
	maximum    *float64
	minLength  int
	maxLength  int // -1: none
	minItems   int
	maxItems   int // -1: none
}

type typeSet uint8

const (
	tString typeSet = 1 << iota
	tInteger
	tNumber
	tBoolean
	tObject
	tArray
	tNull
	tAny typeSet = 0
)

var typeNames = map[string]typeSet{
	"string": tString, "integer": tInteger, "number": tNumber, "boolean": tBoolean,
	"object": tObject, "array": tArray, "null": tNull,
}

// ignoredKeywords carry no constraint.
var ignoredKeywords = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true, "$schema": true, "$id": true, "$comment": true,
}

// compileFast returns nil when the schema uses anything outside the subset.
func compileFast(raw json.RawMessage) *fastSchema {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return fastFrom(m)
}

func fastFrom(m map[string]any) *fastSchema {
	s := &fastSchema{maxLength: -1, maxItems: -1}
	for k, v := range m {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				ts, ok := typeNames[t]
				if !ok {
					return nil
				}
				s.types = ts
			case []any:
				for _, x := range t {
					name, _ := x.(string)
					ts, ok := typeNames[name]
					if !ok {
						return nil
					}
					s.types |= ts
				}
			default:
				return nil
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			s.properties = make(map[string]*fastSchema, len(props))
			for name, p := range props {
				pm, ok := p.(map[string]any)
				if !ok {
					return nil
				}
				if s.properties[name] = fastFrom(pm); s.properties[name] == nil {
					return nil
				}
			}
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, x := range list {
				name, ok := x.(string)
				if !ok {
					return nil
				}
				s.required = append(s.required, name)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			s.noExtra = !b
		case "items":
			im, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			if s.items = fastFrom(im); s.items == nil {
				return nil
			}
		case "enum":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return nil
			}
			for _, x := range list {
				switch x.(type) {
				case string, float64, bool, nil:
				default:
					return nil
				}
			}
			s.enum = list
		case "minimum", "maximum":
			f, ok := v.(float64)
			if !ok {
				return nil
			}
			if k == "minimum" {
				s.minimum = &f
			} else {
				s.maximum = &f
			}
		case "minLength", "maxLength", "minItems", "maxItems":
			f, ok := v.(float64)
			if !ok || f < 0 || f != math.Trunc(f) {
				return nil
			}
			switch k {
			case "minLength":
				s.minLength = int(f)
			case "maxLength":
				s.maxLength = int(f)
			case "minItems":
				s.minItems = int(f)
			default:
				s.maxItems = int(f)
			}
		default:
			if !ignoredKeywords[k] {
				return nil
			}
		}
	}
	return s
}

// valid reports whether v (as decoded by encoding/json) satisfies s.
func (s *fastSchema) valid(v any) bool {
	if s.types != tAny && !s.types.admits(v) {
		return false
	}
	if s.enum != nil && !inEnum(s.enum, v) {
		return false
	}
	switch x := v.(type) {
	case string:
		if s.minLength > 0 || s.maxLength >= 0 {
			n := utf8.RuneCountInString(x)
			if n < s.minLength || (s.maxLength >= 0 && n > s.maxLength) {
				return false
			}
		}
	case float64:
		if (s.minimum != nil && x < *s.minimum) || (s.maximum != nil && x > *s.maximum) {
			return false
		}
	case map[string]any:
		for _, name := range s.required {
			if _, ok := x[name]; !ok {
				return false
			}
		}
		for k, pv := range x {
			p, ok := s.properties[k]
			if !ok {
				if s.noExtra {
					return false
				}
				continue
			}
			if !p.valid(pv) {
				return false
			}
		}
	case []any:
		if len(x) < s.minItems || (s.maxItems >= 0 && len(x) > s.maxItems) {
			return false
		}
		if s.items != nil {
			for _, it := range x {
				if !s.items.valid(it) {
					return false
				}
			}
		}
	}
	return true
}

func (t typeSet) admits(v any) bool {
	switch x := v.(type) {
	case string:
		return t&tString != 0
	case float64:
		if t&tNumber != 0 {
			return true
		}
		return t&tInteger != 0 && x == math.Trunc(x) && !math.IsInf(x, 0)
	case bool:
		return t&tBoolean != 0
	case map[string]any:
		return t&tObject != 0
	case []any:
		return t&tArray != 0
	case nil:
		return t&tNull != 0
	}
	return false
}

func inEnum(enum []any, v any) bool {
	for _, e := range enum {
		if e == v {
			return true
		}
	}
	return false
}
