package toolcall

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// pathological inputs: each builds a text of about n bytes designed to make
// a naive parser rescan (one scan per opener, per marker, per quote…).
var pathological = map[string]func(n int) string{
	"tool_call":          rep("<tool_call>"),
	"tool_call_brace":    rep("<tool_call>{"),
	"tool_call_close":    rep("</tool_call>"),
	"braces":             rep("{"),
	"brackets":           rep("["),
	"brace_quote":        rep(`{"`),
	"quotes":             rep(`"`),
	"single_quotes":      rep(`'`),
	"unclosed_string":    func(n int) string { return `{"name": "` + strings.Repeat("x", n) },
	"nested_balanced":    func(n int) string { return strings.Repeat("[", n/2) + strings.Repeat("]", n/2) },
	"nested_objects":     func(n int) string { return strings.Repeat(`{"a":`, n/5) + "1" + strings.Repeat("}", n/5) },
	"nested_invalid":     func(n int) string { return strings.Repeat("[", n/2) + "x" + strings.Repeat("]", n/2) },
	"mismatched":         func(n int) string { return strings.Repeat("[", n/2) + strings.Repeat("}", n/2) },
	"call_prefix":        rep(`{"name":"search","arguments":`),
	"array_call_prefix":  rep(`[{"name":"search","arguments":{`),
	"mistral":            rep("[TOOL_CALLS]"),
	"mistral_bracket":    rep("[TOOL_CALLS]["),
	"mistral_v11":        rep("[TOOL_CALLS]a[ARGS]"),
	"mistral_v11_brace":  rep("[TOOL_CALLS]a[ARGS]{"),
	"mistral_names":      rep("search[ARGS]{}"),
	"function":           rep("<function="),
	"function_param":     rep("<function=search><parameter="),
	"parameters":         rep("<tool_call><function=search><parameter=q>"),
	"deepseek":           rep("<｜tool▁call▁begin｜>"),
	"deepseek_sep":       rep("<｜tool▁call▁begin｜>function<｜tool▁sep｜>"),
	"deepseek_wrap":      rep("<｜tool▁calls▁begin｜>"),
	"harmony_channel":    rep("<|channel|>"),
	"harmony_message":    rep("<|message|>"),
	"harmony_call":       rep("<|start|>assistant<|channel|>commentary to=functions.search<|message|>{"),
	"harmony_to":         rep("<|channel|>to=to=to="),
	"python_tag":         rep("<|python_tag|>"),
	"python_tag_brace":   rep("<|python_tag|>{"),
	"python_tag_call":    rep("<|python_tag|>a.call("),
	"pythonic":           rep("[a("),
	"pythonic_kw":        rep("[search(query="),
	"pythonic_list":      rep("[search(query=["),
	"pythonic_ident":     func(n int) string { return "[" + strings.Repeat("a", n) },
	"fences":             rep("```"),
	"fences_json":        rep("```json\n{\""),
	"think":              rep("<think>"),
	"think_close":        rep("</think>"),
	"spaces_then_marker": func(n int) string { return strings.Repeat(" ", n) + "[" },
	"many_calls":         rep(`{"name":"search","arguments":{"query":"q"}} `),
	"many_hermes":        rep(`<tool_call>{"name":"search","arguments":{}}</tool_call>`),
	"many_pythonic":      rep("\n[search(query='x')]"),
	"escapes":            func(n int) string { return `{"name":"search","arguments":{"query":"` + strings.Repeat(`\\`, n/2) },
	"mixed_random":       mixed,
	"kimi":               rep("<|tool_call_begin|>"),
	"kimi_args":          rep("<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{"),
	"kimi_section":       rep("<|tool_calls_section_begin|>"),
	"glm":                rep("<tool_call>search\n"),
	"glm_keys":           rep("<tool_call>search<arg_key>q</arg_key><arg_value>"),
	"glm_open_keys":      rep("<arg_key>q</arg_key><arg_value>"),
	"functionary":        rep("\n>>>search\n{"),
	"functionary_all":    rep("\n>>>all\n"),
	"wrappers":           rep(`functools<|tool_call|><tool_calls>{"name":"search","arguments":{}}`),
	"wrapper_closers":    rep(`{"name":"search","arguments":{}}<|/tool_call|></tool_calls><|action_end|>`),
	"param_closers":      func(n int) string { return "<function=search>" + strings.Repeat("<parameter=q>x</parameter>y", n/27) },
}

func rep(unit string) func(n int) string {
	return func(n int) string { return strings.Repeat(unit, n/len(unit)+1) }
}

// mixed concatenates fragments of every format in a fixed random order.
func mixed(n int) string {
	frags := []string{"<tool_call>", "</tool_call>", "{", "}", "[", "]", `"`, "'", "[TOOL_CALLS]", "[ARGS]",
		"<function=", "<parameter=", "</parameter>", "</function>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
		"<|channel|>", "<|message|>", "<|call|>", "<|python_tag|>", "```", "\n", "a(", "=", "search", ":", ",", " "}
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(frags[r.IntN(len(frags))])
	}
	return b.String()
}

// TestLinearWork counts the bytes the parser examines (every scanning loop
// and library scan charges parser.work) for pathological inputs of 10 kB,
// 100 kB and 1 MB. A parser that rescans per candidate does n²/unit work
// and fails the ratio check at the small sizes before the large one could
// take long. No clocks are involved.
func TestLinearWork(t *testing.T) {
	const perByte = 40 // allowed work per input byte
	for name, gen := range pathological {
		for _, withTools := range []bool{true, false} {
			opts := Options{}
			if withTools {
				opts.Tools = testTools
			}
			t.Run(name+map[bool]string{true: "/tools", false: "/no_tools"}[withTools], func(t *testing.T) {
				t.Parallel()
				var prev float64
				for _, n := range []int{10_000, 100_000, 1_000_000} {
					if (testing.Short() || raceEnabled) && n > 100_000 {
						break
					}
					text := gen(n)
					r, work := parseCounted(text, opts)
					checkInvariants(t, name, opts, r)
					perB := float64(work) / float64(len(text))
					if work < int64(len(text)) {
						t.Fatalf("n=%d: work %d is less than the input length %d; the counter is not counting", len(text), work, len(text))
					}
					if perB > perByte {
						t.Fatalf("n=%d: work %d = %.1f per byte, want <= %d", len(text), work, perB, perByte)
					}
					// Linear work keeps work/byte flat; quadratic grows it 10x per step.
					if prev > 0 && perB > 2*prev+1 {
						t.Fatalf("n=%d: work per byte grew from %.2f to %.2f", len(text), prev, perB)
					}
					prev = perB
					if n == 1_000_000 {
						t.Logf("%d bytes: work %d (%.2f per byte)", len(text), work, perB)
					}
				}
			})
		}
	}
}

// TestWorkCounterDetectsQuadratic makes sure the check above can fail: a
// deliberately quadratic scan charged the same way trips the same limit.
func TestWorkCounterDetectsQuadratic(t *testing.T) {
	quadratic := func(text string) int64 {
		p := &parser{text: text}
		for i := range text { // rescan from every opener, as a naive parser would
			if text[i] == '{' {
				p.jsonExtent(i, len(text))
			}
		}
		return p.work
	}
	text := strings.Repeat("{", 10_000)
	if w := quadratic(text); float64(w)/float64(len(text)) <= 40 {
		t.Fatalf("quadratic scan charged only %d for %d bytes", w, len(text))
	}
}
