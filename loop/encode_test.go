package loop

import (
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
	"time"

	"github.com/agentloop/agentloop/model"
)

// oddStrings are the strings json.Marshal writes with escapes.
var oddStrings = []string{"", "plain", "<b>&amp;</b>", "\u2028\u2029", "\xff\xfe", "a\x00b\x1f", "\"quoted\" \\ /", "é 日本 😀", "line\nbreak\ttab\r"}

// oddRaw are raw JSON values json.Marshal writes as they are, compacts,
// escapes or refuses.
var oddRaw = []json.RawMessage{nil, {}, json.RawMessage(`{"a":1,"b":100}`), json.RawMessage(`[1,"x",{"y":null}]`), json.RawMessage(`"s"`),
	json.RawMessage(`null`), json.RawMessage(`{}`), json.RawMessage(`{ "a": 1 }`), json.RawMessage("[1,\n2]"), json.RawMessage(`{"a":"<b>"}`),
	json.RawMessage(`{"a":"x y"}`), json.RawMessage(`{"a":"\u2028"}`), json.RawMessage("{\"a\":\"\u2028\"}"), json.RawMessage(`{`),
	json.RawMessage(`{"a":"\"}"}`), json.RawMessage(`1 2`), json.RawMessage(`{"a":"\\"}`), json.RawMessage("\"\xff\"")}

// roughen replaces, at random, the strings, raw JSON, floats and
// slices quick.Value made inside v with values that need escaping,
// compacting or refusing.
func roughen(v reflect.Value, rng *rand.Rand) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			roughen(v.Elem(), rng)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			roughen(v.Field(i), rng)
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.Set(reflect.ValueOf(oddRaw[rng.Intn(len(oddRaw))]))
			return
		}
		switch rng.Intn(4) {
		case 0:
			v.Set(reflect.Zero(v.Type()))
		case 1:
			v.Set(v.Slice(0, min(v.Len(), 2)))
		}
		for i := range v.Len() {
			roughen(v.Index(i), rng)
		}
	case reflect.String:
		if rng.Intn(2) == 0 {
			v.SetString(oddStrings[rng.Intn(len(oddStrings))])
		}
	case reflect.Float64:
		switch rng.Intn(6) {
		case 0:
			v.SetFloat(0)
		case 1:
			v.SetFloat([]float64{math.NaN(), math.Inf(1), 1e-7, 1e21, 0.1, -2.5}[rng.Intn(6)])
		}
	case reflect.Int, reflect.Int64:
		if rng.Intn(3) == 0 {
			v.SetInt(0)
		}
	case reflect.Bool:
		v.SetBool(rng.Intn(2) == 0)
	}
}

// TestAppendPayloadMatchesMarshal fills every field of each payload
// appendPayload writes with random values — a field it does not know is
// filled too, and missing from its output — and holds the output to
// json.Marshal's, byte for byte, whenever it writes one.
func TestAppendPayloadMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, p := range []Payload{&IterationStarted{}, &IterationEnded{}, &ToolStarted{}, &ToolFinished{}, &ModelResponded{}} {
		typ := reflect.TypeOf(p).Elem()
		written := 0
		for range 3000 {
			v, ok := quick.Value(typ, rng)
			if !ok {
				t.Fatalf("quick.Value %s", typ)
			}
			ptr := reflect.New(typ)
			ptr.Elem().Set(v)
			roughen(ptr, rng)
			payload := ptr.Interface().(Payload)
			got, ok := appendPayload([]byte("x"), payload)
			if !ok {
				continue
			}
			written++
			want, err := json.Marshal(payload)
			if err != nil {
				t.Fatalf("%s: appendPayload wrote %s, json.Marshal refuses it: %v", typ, got, err)
			}
			if string(got) != "x"+string(want) {
				t.Fatalf("%s %+v:\n got %s\nwant %s", typ, payload, got[1:], want)
			}
		}
		if written < 300 {
			t.Errorf("%s: appendPayload wrote only %d of 3000", typ, written)
		}
	}
}

// What a session records at every iteration is written by appendPayload,
// and EncodeData gives what json.Marshal does for the rest too.
func TestEncodeDataMatchesMarshal(t *testing.T) {
	for _, p := range []Payload{
		&IterationStarted{N: 3},
		&IterationEnded{N: 3, Status: IterationCompleted},
		&ToolStarted{Iteration: 1, CallID: "call_0", Name: "add", Input: json.RawMessage(`{"a":1,"b":100}`)},
		&ToolFinished{Iteration: 1, CallID: "call_0", Name: "add", Output: "101"},
		&ModelResponded{Iteration: 1, ToolCalls: nil, FinishReason: "tool_calls", Format: "native"},
		&SessionStarted{Task: "t <b>", Model: "m"},
	} {
		e := NewEvent("s", 1, time.Unix(1700000000, 0), p)
		got, err := e.EncodeData()
		want, _ := json.Marshal(p)
		if err != nil || string(got) != string(want) {
			t.Errorf("%T: %s, %v; want %s", p, got, err, want)
		}
		if _, ok := appendPayload(nil, p); !ok && e.Type != "session.started" {
			t.Errorf("%T is not written by appendPayload", p)
		}
	}
	if _, err := NewEvent("s", 1, time.Unix(1700000000, 0), &ToolStarted{Input: json.RawMessage(`{`)}).EncodeData(); err == nil {
		t.Error("invalid raw input encoded")
	}
}

// BenchmarkEncodeData encodes one iteration's events of a short tool-call
// session, with appendPayload and with json.Marshal.
//
//	go test -run '^$' -bench EncodeData -benchmem ./loop
func BenchmarkEncodeData(b *testing.B) {
	args := json.RawMessage(`{"a":1,"b":100}`)
	iteration := []Payload{
		&IterationStarted{N: 1},
		&ModelResponded{Iteration: 1, ToolCalls: []model.ToolCall{{ID: "call_0", Name: "add", Arguments: args}}, FinishReason: "tool_calls", Usage: model.Usage{InputTokens: 40, OutputTokens: 12}, Format: "native"},
		&ToolStarted{Iteration: 1, CallID: "call_0", Name: "add", Input: args},
		&ToolFinished{Iteration: 1, CallID: "call_0", Name: "add", Output: "101"},
		&IterationEnded{N: 1, Status: IterationCompleted},
	}
	b.Run("appendPayload", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, p := range iteration {
				buf, _ = appendPayload(buf, p)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range iteration {
				if _, err := json.Marshal(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
