package toolcall

import (
	"reflect"
	"testing"
)

// FuzzParse checks invariants on arbitrary text: no panic, arguments are
// JSON objects, names are non-empty (and offered, when tools are), IDs are
// sequential, the result is deterministic, Content never grows, and the
// work stays linear. The seed corpus in testdata/fuzz/FuzzParse has
// examples of every format, well-formed and broken. mode&1 offers tools.
func FuzzParse(f *testing.F) {
	f.Add(`<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>`, uint8(1))
	f.Add(`[get_weather(city='Paris')]`, uint8(0))
	f.Fuzz(func(t *testing.T, text string, mode uint8) {
		opts := Options{}
		if mode&1 == 1 {
			opts.Tools = testTools
		}
		r, work := parseCounted(text, opts)
		checkInvariants(t, text, opts, r)
		if limit := int64(40*len(text) + 4096); work > limit {
			t.Fatalf("work %d for %d bytes exceeds %d", work, len(text), limit)
		}
		if len(r.Content) > len(text) {
			t.Fatalf("content (%d bytes) longer than the input (%d)", len(r.Content), len(text))
		}
		if again := Parse(text, opts); !reflect.DeepEqual(again, r) {
			t.Fatalf("parse is not deterministic:\n%#v\n%#v", r, again)
		}
	})
}
