package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// encodeJSON is what the Append functions must match with html unset: a json.Encoder without HTML
// escaping, less its newline.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func checkString(t *testing.T, s string) {
	t.Helper()
	want, _ := encodeJSON(s)
	if got := AppendString([]byte("x"), s, false); string(got) != "x"+string(want) {
		t.Fatalf("AppendString(%q) = %s, want %s", s, got[1:], want)
	}
	if got := AppendString(nil, []byte(s), false); string(got) != string(want) {
		t.Fatalf("AppendString([]byte(%q)) = %s, want %s", s, got, want)
	}
	// With html set, what json.Marshal writes.
	want, _ = json.Marshal(s)
	if got := AppendString(nil, s, true); string(got) != string(want) {
		t.Fatalf("AppendString(%q, html) = %s, want %s", s, got, want)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `"\`, "<&>", "\u2028\u2029", "\x00\x01\x08\x0c\x0a\x0d\x09\x1f\x7f",
		"\xff", "a\xffb", "\xe2\x80", "é😀\U0010FFFF", "\xed\xa0\x80", strings.Repeat("ab\n", 100)} {
		checkString(t, s)
	}
	for c := range 256 {
		checkString(t, string([]byte{byte(c)}))
		checkString(t, "a"+string([]byte{byte(c)})+"b")
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("<\u2028\xff\x00\"é")
	f.Fuzz(func(t *testing.T, s string) {
		checkString(t, s)
	})
}

func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.2, 0.7, 2, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 1.2345e21, -1e-300,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		want, werr := encodeJSON(f)
		got, gerr := AppendFloat(nil, f)
		if werr != nil || gerr != nil {
			if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
				t.Errorf("%v: error %v, want %v", f, gerr, werr)
			}
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
}

func checkRaw(t *testing.T, raw json.RawMessage) {
	t.Helper()
	want, werr := encodeJSON(raw)
	got, gerr := AppendRaw([]byte("x"), raw)
	if werr != nil || gerr != nil {
		if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
			t.Fatalf("%q: error %v, want %v", raw, gerr, werr)
		}
		return
	}
	if string(got) != "x"+string(want) {
		t.Fatalf("%q: %s, want %s", raw, got[1:], want)
	}
}

func TestAppendRaw(t *testing.T) {
	for _, raw := range []json.RawMessage{nil, {}, json.RawMessage("null"), json.RawMessage(`{"a": [1, 2 ],"b" :"x y\n"}`),
		json.RawMessage(" 1 "), json.RawMessage(`{"a":`), json.RawMessage(`{} {}`), json.RawMessage(`"<&>\u2028` + "\u2028\"")} {
		checkRaw(t, raw)
	}
}

func FuzzAppendRaw(f *testing.F) {
	f.Add([]byte(`{"type": "object", "properties": {"a": {"type": "string"}}}`))
	f.Add([]byte("[1,\n2]"))
	f.Fuzz(func(t *testing.T, b []byte) { checkRaw(t, b) })
}
