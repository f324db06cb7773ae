package transport

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// encodeJSON is what AppendJSON* must match: a json.Encoder without HTML
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
	if got := AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
		t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got[1:], want)
	}
	if got := AppendJSONString(nil, []byte(s)); string(got) != string(want) {
		t.Fatalf("AppendJSONString([]byte(%q)) = %s, want %s", s, got, want)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `"\`, "<&>", "\u2028\u2029", "\x00\x01\x08\x0c\x0a\x0d\x09\x1f\x7f",
		"\xff", "a\xffb", "\xe2\x80", "é😀\U0010FFFF", "\xed\xa0\x80", strings.Repeat("ab\n", 100)} {
		checkString(t, s)
	}
	for c := range 256 {
		checkString(t, string([]byte{byte(c)}))
		checkString(t, "a"+string([]byte{byte(c)})+"b")
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("<\u2028\xff\x00\"é")
	f.Fuzz(func(t *testing.T, s string) {
		checkString(t, s)
	})
}

func TestAppendJSONFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.2, 0.7, 2, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 1.2345e21, -1e-300,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		want, werr := encodeJSON(f)
		got, gerr := AppendJSONFloat(nil, f)
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
	got, gerr := AppendJSONRaw([]byte("x"), raw)
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

func TestAppendJSONRaw(t *testing.T) {
	for _, raw := range []json.RawMessage{nil, {}, json.RawMessage("null"), json.RawMessage(`{"a": [1, 2 ],"b" :"x y\n"}`),
		json.RawMessage(" 1 "), json.RawMessage(`{"a":`), json.RawMessage(`{} {}`), json.RawMessage(`"<&>\u2028` + "\u2028\"")} {
		checkRaw(t, raw)
	}
}

func FuzzAppendJSONRaw(f *testing.F) {
	f.Add([]byte(`{"type": "object", "properties": {"a": {"type": "string"}}}`))
	f.Add([]byte("[1,\n2]"))
	f.Fuzz(func(t *testing.T, b []byte) { checkRaw(t, b) })
}

// decodeTarget has the field kinds the providers decode into.
type decodeTarget struct {
	S   string          `json:"s"`
	P   *string         `json:"p"`
	N   int             `json:"n"`
	F   float64         `json:"f"`
	B   bool            `json:"b"`
	Raw json.RawMessage `json:"raw"`
	Arr []struct {
		I     *int `json:"i"`
		Inner struct {
			X string `json:"x"`
		} `json:"inner"`
	} `json:"arr"`
	Obj *struct {
		Y int `json:"y"`
	} `json:"obj"`
}

// checkDecode compares JSONDecoder.Unmarshal with json.Unmarshal over a
// sequence of documents decoded with the same JSONDecoder.
func checkDecode(t *testing.T, docs ...[]byte) {
	t.Helper()
	var j JSONDecoder
	for _, doc := range docs {
		var want, got decodeTarget
		werr := json.Unmarshal(doc, &want)
		gerr := j.Unmarshal(doc, &got)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("%q: error %v, want %v", doc, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %+v, want %+v", doc, got, want)
		}
	}
}

func TestJSONDecoder(t *testing.T) {
	ok := []byte(`{"s":"a\u00e9\n","p":"x","n":3,"f":1.5,"b":true,"raw":{"k": [1]},"arr":[{"i":1,"inner":{"x":"y"}},{"i":null}],"obj":{"y":2}}`)
	bad := [][]byte{
		nil, []byte("  "), []byte(`{"s":`), []byte(`{"s":"x"} {}`), []byte(`{"s":"x"}}`), []byte(`{"s":1}`), []byte(`{"n":"x","s":2}`),
		[]byte(`{"arr":[{"inner":{"x":5}}]}`), []byte(`[1]`), []byte(`"str"`), []byte(`12`), []byte(`null`), []byte("\v{}"),
		[]byte("\n {\"s\":\"x\"} \r\n"), []byte(`{"s":"\ud800"}`), []byte("{\"s\":\"\xff\"}"), []byte(`{"s":"x"}x`), []byte(`{"p":null}`),
	}
	for _, b := range bad {
		checkDecode(t, ok, b, ok, b, b, ok)
	}
}

func FuzzJSONDecoder(f *testing.F) {
	f.Add([]byte(`{"s":"x","arr":[{"i":1}]}`), []byte(`{"n":"x"}`))
	f.Add([]byte(`{"s":`), []byte(` {"obj":{"y":1}} `))
	f.Fuzz(func(t *testing.T, a, b []byte) { checkDecode(t, a, b, a, a, b) })
}

func FuzzArgumentsString(f *testing.F) {
	for _, s := range []string{"", "  ", `{"a":1}`, ` {"a":1} `, `{"path": "main.go"`, "not json", "\u00a0{}\u00a0", "\xff{}", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ArgumentsString(s), Arguments([]byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("ArgumentsString(%q) = %s, Arguments = %s", s, got, want)
		}
	})
}
