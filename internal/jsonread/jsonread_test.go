package jsonread

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// checkSkip holds Skip to json.Valid: what it reads is valid JSON, and
// valid JSON no deeper than MaxDepth is read.
func checkSkip(t *testing.T, doc []byte) {
	t.Helper()
	r := Reader{B: doc}
	r.Space()
	got := r.Skip() && r.AtEnd()
	valid := json.Valid(doc)
	if got && !valid {
		t.Fatalf("Skip read %q, which json.Valid refuses", doc)
	}
	if !got && valid && bytes.Count(doc, []byte("["))+bytes.Count(doc, []byte("{")) <= MaxDepth {
		t.Fatalf("Skip refused %q, which json.Valid accepts", doc)
	}
}

// checkString holds String and Unquote to json.Unmarshal on a string
// value: a string read and unquoted is what json.Unmarshal decodes.
func checkString(t *testing.T, doc []byte) {
	t.Helper()
	r := Reader{B: doc}
	raw, escaped, ok := r.String()
	if !ok || r.I != len(doc) {
		return
	}
	var want string
	if err := json.Unmarshal(doc, &want); err != nil {
		t.Fatalf("String read %q, which json.Unmarshal refuses: %v", doc, err)
	}
	if got, ok := Unquote(raw, escaped); ok && got != want {
		t.Fatalf("Unquote(%q) = %q, json.Unmarshal %q", doc, got, want)
	}
}

var docs = []string{
	``, ` `, `null`, `true`, `false`, `tru`, `nul`, `0`, `-0`, `01`, `1.`, `.5`, `-`, `1e`, `1E+5`, `-0.5e-3`, `123456789012345678`,
	`""`, `"a\"b\\c\/d\b\f\n\r\t\u00e9\u2028"`, `"\x"`, `"\u12"`, `"\u00g0"`, "\"\x01\"", "\"\xff\"", `"\ud83d\ude00"`, `"é 日本 😀"`,
	`[]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{"a":1,"a":2}`, `{1:2}`, `{"a":[{"b":null}],"c":"d"}`,
	` { "a" : [ 1 , 2 ] } `, `{} {}`, `[` + strings.Repeat("[", 40) + strings.Repeat("]", 41),
}

func TestSkipAgreesWithValid(t *testing.T) {
	for _, d := range docs {
		checkSkip(t, []byte(d))
		checkString(t, []byte(d))
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if r := (Reader{B: []byte(deep)}); r.Skip() {
		t.Errorf("Skip followed nesting deeper than MaxDepth")
	}
}

func FuzzReader(f *testing.F) {
	for _, d := range docs {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkSkip(t, doc)
		checkString(t, doc)
	})
}

func TestNumberExact(t *testing.T) {
	for _, c := range []struct {
		in    string
		v     int64
		exact bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"42", 42, true}, {"-7", -7, true}, {"999999999999999", 999999999999999, true},
		{"1234567890123456", 0, false}, {"1.0", 0, false}, {"1e2", 0, false},
	} {
		r := Reader{B: []byte(c.in)}
		n, ok := r.Number()
		v, exact := n.Exact()
		if !ok || exact != c.exact || (exact && v != c.v) {
			t.Errorf("%s: %d, %v (read %v), want %d, %v", c.in, v, exact, ok, c.v, c.exact)
		}
	}
}
