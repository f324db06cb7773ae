package loop

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"

	"github.com/agentloop/agentloop/internal/jsonread"
	"github.com/agentloop/agentloop/internal/jsonw"
	"github.com/agentloop/agentloop/internal/ownstack"
)

// canonicalJSON is b with insignificant whitespace removed and object keys
// sorted, so two calls the model wrote differently but that mean the same
// compare equal; b itself (compacted) when it is not valid JSON. It writes
// what json.Marshal writes for b decoded with UseNumber.
func canonicalJSON(b json.RawMessage) []byte {
	if len(b) == 0 || b[0] != '{' {
		return compactJSON(b)
	}
	if out, ok := canonicalFlat(b); ok {
		return out
	}
	// encoding/json recurses with large frames: run on a goroutine of its
	// own so the session's stack stays small (see package ownstack).
	out, _ := ownstack.Run(func() ([]byte, error) { return canonicalNested(b), nil })
	return out
}

// canonicalNested is canonicalJSON through encoding/json, for any depth.
func canonicalNested(b json.RawMessage) []byte {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&v) != nil || d.More() {
		return compactJSON(b)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return compactJSON(b)
	}
	return out
}

// member is one name and its value, as canonicalJSON writes it.
type member struct {
	name  string
	value []byte
}

// canonicalFlat is canonicalJSON for an object whose values are all
// strings, numbers, booleans or null — most tools' arguments — without
// encoding/json, so on the caller's goroutine. ok is false for anything
// else (nested values, text encoding/json would repair), which the caller
// then reduces through encoding/json.
func canonicalFlat(b []byte) (out []byte, ok bool) {
	r := jsonread.Reader{B: b}
	r.Space()
	var members []member
	read := r.Object(func(raw []byte, escaped bool) bool {
		name, ok := jsonread.Unquote(raw, escaped)
		if !ok {
			return false
		}
		start := r.I
		var value []byte
		switch r.At() {
		case '"':
			raw, escaped, ok := r.String()
			if !ok {
				return false
			}
			s, ok := jsonread.Unquote(raw, escaped)
			if !ok {
				return false
			}
			value = jsonw.AppendString(nil, s, true)
		case 't':
			ok = r.Literal("true")
		case 'f':
			ok = r.Literal("false")
		case 'n':
			ok = r.Literal("null")
		case '{', '[':
			return false
		default:
			_, ok = r.Number()
		}
		if !ok {
			return false
		}
		if value == nil {
			value = b[start:r.I]
		}
		members = append(members, member{name, value})
		return true
	})
	if r.Space(); !read || !r.AtEnd() {
		return nil, false
	}
	// A name given twice keeps its last value, as decoding into a map
	// does: the stable sort keeps their order, and only the last is kept.
	slices.SortStableFunc(members, func(a, b member) int { return cmp.Compare(a.name, b.name) })
	out = append(make([]byte, 0, len(b)), '{')
	for i, m := range members {
		if i+1 < len(members) && members[i+1].name == m.name {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = jsonw.AppendString(out, m.name, true)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}'), true
}
