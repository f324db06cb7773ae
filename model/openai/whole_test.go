package openai

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	pt "github.com/agentloop/agentloop/model/internal/providertest"
	"github.com/agentloop/agentloop/model/internal/transport"
)

// ordinaryReplies are replies decodeWhole must decode itself: what
// servers send, escapes, non-ASCII text, nulls and unknown fields included.
var ordinaryReplies = []string{
	`{}`, `{"choices":[]}`, `{"choices":null}`, `{"choices":[{}]}`, `{"choices":[null]}`, `{"choices":[{"message":null}]}`,
	`{"error":null,"choices":[{"message":{"content":"hi"}}]}`,
	`{"error":{"message":"Provider returned error","code":502},"choices":[]}`,
	`{"model":"m2","choices":[{"index":3,"message":{"content":null,"refusal":"no"},"finish_reason":"content_filter"}]}`,
	`{"choices":[{"message":{"reasoning_content":"a","reasoning":"b","content":"c"},"finish_reason":"length"}]}`,
	`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f"}},{"id":"x","function":{"name":"g","arguments":" {\"a\":1} "}},{"function":null},null]},"finish_reason":"stop"}]}`,
	`{"choices":[{"message":{"tool_calls":[],"content":"caf\u00e9 \u2028 na\u00efve — ünïcödé 😀 \"q\" \\ \/ \b\f\n\r\t"}}]}`,
	`{"choices":[{"message":{"tool_calls":null,"content":""}}]}`,
	`{"choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"sig=="}}},{"extra_content":null}]}}]}`,
	`{"usage":{"prompt_tokens":1,"completion_tokens":-2,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":7,"other":[1,2.5e3,{"x":[true,false,null]}]}},"choices":[{"message":{"content":"x"}}]}`,
	`{"usage":null,"choices":[{"message":{"content":"x"}}]}`,
	`{"usage":{"prompt_tokens":null,"prompt_tokens_details":null,"completion_tokens_details":null}}`,
	`{"id":"x","object":"chat.completion","created":1,"system_fingerprint":null,"service_tier":"default","choices":[{"logprobs":null,"message":{"role":"assistant","annotations":[],"audio":null,"content":"a"}}],"error":"e"}`,
	`{"x":{"s":"fp_\u00e9\n\"é","n":-0.5E+2,"e":[],"o":{},"a":[{"b":[0,1e-3,true]}]},"choices":[{"message":{"content":"x"}}]}`,
	" \n{ \"choices\" : [ { \"message\" : { \"content\" : \"x\" } } ] }\n\n",
}

func TestDecodeWholeReadsOrdinaryReplies(t *testing.T) {
	bodies := ordinaryReplies
	for _, name := range []string{"completion_text.json", "completion_tool_calls.json", "completion_gemini_thinking.json"} {
		bodies = append(bodies, string(pt.Load(t, name)))
	}
	bodies = append(bodies, string(benchJSON()))
	for _, b := range bodies {
		var w wholeReply
		if !decodeWhole([]byte(b), &w) {
			t.Errorf("declined %s", b)
			continue
		}
		checkWholeAgrees(t, []byte(b), &w)
	}
}

// Anything json.Unmarshal might decode otherwise, or refuse, is left to it.
func TestDecodeWholeLeavesTheUnusualToEncodingJSON(t *testing.T) {
	for _, b := range []string{
		``, `null`, `[]`, `"x"`, `{"choices":[]} trailing`, `{"choices":[{"message":{}}]`,
		`{"Model":"m"}`, `{"CHOICES":[]}`, `{"choices":[{"Message":{"content":"x"}}]}`, `{"usage":{"Prompt_Tokens":1}}`,
		`{"mod\u0065l":"m"}`, `{"modeſ":"m"}`,
		`{"model":"a","model":"b"}`, `{"choices":[{"message":{"content":"a","content":"b"}}]}`,
		`{"choices":[{"index":1.0}]}`, `{"choices":[{"index":1e2}]}`, `{"usage":{"prompt_tokens":1234567890123456}}`,
		`{"choices":[{"message":{"content":"\ud83d\ude00"}}]}`, "{\"model\":\"\xff\"}",
		`{"model":5}`, `{"choices":{}}`, `{"choices":[5]}`, `{"choices":[{"message":[]}]}`, `{"choices":[{"message":{"content":5}}]}`,
		`{"choices":[{"message":{"tool_calls":{}}}]}`, `{"choices":[{"message":{"tool_calls":[{"function":"f"}]}}]}`,
		`{"usage":[]}`, `{"usage":{"prompt_tokens":"1"}}`, `{"usage":{"prompt_tokens_details":5}}`,
		// Syntax errors, in the fields read and in those skipped.
		`{"model":"m",}`, `{"model" "m"}`, `{"model":"m" "x":1}`, `{"choices":[{},]}`, `{"choices":[{}}`, `{,"model":"m"}`,
		`{"model":"a\qb"}`, "{\"model\":\"a\tb\"}", `{"model":"a\u12"}`, `{"model":"abc`,
		`{"x":01}`, `{"x":1.}`, `{"x":-}`, `{"x":1e}`, `{"x":.5}`, `{"x":tru}`, `{"x":nul}`, `{"x":[1,]}`, `{"x":{"a"}}`,
		`{"x":{"a":1,}}`, `{"x":"\x"}`, "{\"x\":\"\x01\"}", `{"x":[}`, `{"x":"\u00g0"}`, `{"choices":[{"index":01}]}`,
		// Valid, but nested deeper than skip follows.
		`{"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`,
	} {
		var w wholeReply
		if decodeWhole([]byte(b), &w) {
			t.Errorf("decoded %s itself: %+v", b, w)
		}
	}
}

// FuzzDecodeWholeAgrees holds decodeWhole to json.Unmarshal: whatever it
// decodes, json.Unmarshal decodes to the same value.
//
//	go test -run '^$' -fuzz FuzzDecodeWholeAgrees -fuzztime 60s ./model/openai
func FuzzDecodeWholeAgrees(f *testing.F) {
	for _, b := range ordinaryReplies {
		f.Add([]byte(b))
	}
	for _, b := range jsonBodies {
		f.Add([]byte(b))
	}
	f.Add(benchJSON())
	f.Fuzz(func(t *testing.T, body []byte) {
		var w wholeReply
		if decodeWhole(body, &w) {
			checkWholeAgrees(t, body, &w)
		}
	})
}

func checkWholeAgrees(t *testing.T, body []byte, got *wholeReply) {
	t.Helper()
	var want wholeReply
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("decodeWhole decoded what json.Unmarshal refuses (%v): %q", err, body)
	}
	if !reflect.DeepEqual(got, &want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(&want)
		t.Fatalf("decodeWhole disagrees with json.Unmarshal on %q:\n got %s\nwant %s", body, gj, wj)
	}
}

// BenchmarkDecodeWhole compares decodeWhole with the reused json.Decoder
// it stands in front of, on a short tool-call reply (as the comparison's
// fake model sends) and on a long one (benchJSON).
//
//	go test -run '^$' -bench DecodeWhole -benchmem ./model/openai
func BenchmarkDecodeWhole(b *testing.B) {
	short := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"add","arguments":"{\"a\":4,\"b\":106}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":20,"total_tokens":140}}`)
	for _, r := range []struct {
		name string
		body []byte
	}{{"short", short}, {"long", benchJSON()}} {
		b.Run(r.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(r.body)))
			b.ReportAllocs()
			for b.Loop() {
				var w wholeReply
				dec := transport.GetJSONDecoder()
				if err := dec.Unmarshal(r.body, &w); err != nil {
					b.Fatal(err)
				}
				transport.PutJSONDecoder(dec)
			}
		})
		b.Run(r.name+"/decodeWhole", func(b *testing.B) {
			b.SetBytes(int64(len(r.body)))
			b.ReportAllocs()
			for b.Loop() {
				var w wholeReply
				if !decodeWhole(r.body, &w) {
					b.Fatal("declined")
				}
			}
		})
	}
}
