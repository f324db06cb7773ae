package toolcall

import (
	"strings"
	"testing"
)

// benchInputs are realistic replies, a few hundred bytes to a few kB.
func benchInputs() map[string]string {
	code := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) {\n\tfmt.Fprintf(w, \"hello %s\\n\", r.URL.Path)\n}\n\n", 30)
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog; it then reads the [docs](http://x) and writes {some} notes. ", 40)
	return map[string]string{
		"none":        prose,
		"json":        "I'll look that up for you.\n" + `{"name": "search", "arguments": {"query": "golang fuzzing linear time parser", "limit": 10}}`,
		"json_fenced": "Let me check the weather first.\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n```\n",
		"hermes": "<think>\nThe user wants the file written; I will call read_file first and then write it.\n</think>\n\n" +
			`<tool_call>` + "\n" + `{"name": "read_file", "arguments": {"path": "server/main.go", "content": ` + jsonQuote(code) + `}}` + "\n</tool_call>",
		"qwen3_coder":      "I'll write the handler now.\n<tool_call>\n<function=read_file>\n<parameter=path>\nserver/main.go\n</parameter>\n<parameter=content>\n" + code + "</parameter>\n</function>\n</tool_call>",
		"mistral":          `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}, "id": "abc123xyz"}, {"name": "search", "arguments": {"query": "paris events"}, "id": "def456uvw"}]`,
		"mistral_v11":      `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}[TOOL_CALLS]search[ARGS]{"query": "paris events this weekend"}`,
		"llama3":           `{"name": "get_weather", "parameters": {"city": "San Francisco", "days": 2}}`,
		"llama_python_tag": `<|python_tag|>{"name": "search", "parameters": {"query": "latest go release notes"}}<|eom_id|>`,
		"pythonic":         `[get_weather(city='San Francisco', days=2, metric=True), search(query="events", opts={'limit': 5, 'tags': ['music', 'art']})]`,
		"deepseek_v3": "I'll check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\", \"days\": 3}\n```<｜tool▁call▁end｜>\n" +
			"<｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{\"query\": \"paris events\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		"deepseek_v31": `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris", "days": 3}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
		"harmony":      `<|channel|>analysis<|message|>` + prose[:600] + `<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris","days":3}<|call|>`,
	}
}

func jsonQuote(s string) string { return string(appendJSONString(nil, s)) }

func BenchmarkParse(b *testing.B) {
	opts := Options{Tools: testTools}
	for name, in := range benchInputs() {
		if r := Parse(in, opts); r.Format != name || (name != FormatNone && len(r.Calls) == 0) {
			b.Fatalf("%s: parsed as %q with %d calls (%s)", name, r.Format, len(r.Calls), r.Problem)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				Parse(in, opts)
			}
		})
	}
}

// BenchmarkParsePathological runs 1 MB adversarial inputs, for throughput
// on the worst cases the linear-work test guards.
func BenchmarkParsePathological(b *testing.B) {
	for _, name := range []string{"tool_call", "braces", "mistral", "pythonic", "deepseek", "harmony_call", "mixed_random"} {
		in := pathological[name](1 << 20)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				Parse(in, Options{Tools: testTools})
			}
		})
	}
}
