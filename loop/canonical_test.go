package loop

import (
	"bytes"
	"testing"
)

// TestCanonicalFlatMatchesEncodingJSON: the reduction of flat arguments
// written by hand is byte for byte what encoding/json writes, so a call
// compares the same whichever path reduced it.
func TestCanonicalFlatMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { } `, `{"b":1,"a":2}`, `{"a":"x","a":"y"}`, `{"z":null,"y":true,"x":false}`,
		`{"s":"<tag> & \u00e9 \n \u2028 \"q\" \/"}`, `{"n":-0.5e+10,"m":0,"k":12345678901234567890}`,
		`{"\u00e9":1,"e":2,"é2":3}`, `{"a":1 , "b" : "two" }`,
	} {
		got, ok := canonicalFlat([]byte(in))
		if !ok {
			t.Errorf("%s: not read as flat", in)
			continue
		}
		if want := canonicalNested([]byte(in)); !bytes.Equal(got, want) {
			t.Errorf("%s: flat %s, encoding/json %s", in, got, want)
		}
	}
	for _, in := range []string{`{"a":{"b":1}}`, `{"a":[1]}`, `{"a":1`, `{"a":1}x`, `{"a":01}`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`} {
		if got, ok := canonicalFlat([]byte(in)); ok {
			t.Errorf("%s: read as flat (%s), want the encoding/json path", in, got)
		}
	}
	if got := string(canonicalJSON([]byte(`{"b":{"d":1,"c":2},"a":[3]}`))); got != `{"a":[3],"b":{"c":2,"d":1}}` {
		t.Errorf("nested: %s", got)
	}
}

// FuzzCanonicalFlat: whenever the hand-written reduction reads an input,
// it agrees with encoding/json.
func FuzzCanonicalFlat(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":"x"}`, `{"a":"\u0041\\"}`, `{"x":1e3,"x":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := canonicalFlat(in)
		if !ok {
			return
		}
		if want := canonicalNested(in); !bytes.Equal(got, want) {
			t.Fatalf("%q: flat %s, encoding/json %s", in, got, want)
		}
	})
}
