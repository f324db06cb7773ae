package transport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

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
