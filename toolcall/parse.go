// Package toolcall recovers tool calls that a model wrote into its text
// instead of the provider's structured tool-call field: local models, and
// servers started without a tool parser, leave them in the content.
//
// Parse recognises one family per reply, tried in this order:
//
//	harmony           gpt-oss channels: <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>
//	deepseek_v3       <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>
//	deepseek_v31      <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>
//	kimi_k2           <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>…
//	mistral           [TOOL_CALLS][{"name": …, "arguments": {…}}]
//	mistral_v11       [TOOL_CALLS]NAME[ARGS]{…} (optionally [CALL_ID]id before [ARGS]), repeated
//	llama_python_tag  <|python_tag|>{"name": …, "parameters": {…}} or <|python_tag|>tool.call(k=v)
//	glm45             <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>…</tool_call> (values typed by schema)
//	hermes            <tool_call>{"name": …, "arguments": {…}}</tool_call> (several; the last may be unclosed)
//	qwen3_coder       <tool_call><function=NAME><parameter=K>v</parameter></function></tool_call>, outer tag optional
//	                  (and <function=NAME>{…}</function>, as Llama 3.1 writes it)
//	functionary_v32   >>>NAME\n{…} segments (>>>all\n is text); a leading NAME\n{…} when NAME is offered
//	pythonic          [get_weather(city='Paris'), other(x=1)] (also inside <|python_start|>…<|python_end|>)
//	llama3            a bare {"name": …, "parameters": {…}} or {"type": "function", "name": …, "parameters": …}
//	granite           <|tool_call|>[{…}] (Granite 3.x)           ┐ JSON calls behind a family's marker:
//	phi4_mini         functools[{…}] or <|tool_call|>{…}<|/tool_call|> │ found by the JSON families, the
//	jamba             <tool_calls>[{…}]</tool_calls>             │ markers leave Content (wrappers.go;
//	internlm2         <|action_start|><|plugin|>\n{…}<|action_end|> ┘ also Hermes's <tools>, <response>)
//	json              any other bare call object or array (xLAM's bare list too): {"name","arguments"}, {"function":{…}},
//	                  {"tool","args"}, {"tool_name","tool_input"}, {"action","action_input"}, {"tool_calls":[…]}
//	json_fenced       the same inside a ```json (or plain ```) fence
//
// A leading <think>…</think> block (or text ending in </think> with the
// opener in the prompt) is moved to Result.Reasoning and never searched for
// calls, so a model thinking about a call does not make it twice.
//
// Variant spellings the reference parsers accept are read too (see
// normalize.go and testdata/reference.json, each case naming the test it
// comes from): Mistral v11 calls whose [ARGS] was dropped as a special
// token (NAME{…}), a list whose last object is left open before "]",
// [THINK]…[/THINK] reasoning, <function name="NAME"> and <parameter = K>,
// DeepSeek's markers with ASCII bars, Functionary's >>> inside a line and
// >>>python followed by raw code. Qwen3-Coder values are typed by the
// schema the way vLLM's parser does (its type aliases, "2.0" as 2 for a
// number), and a <parameter= on its own line before any </parameter>
// starts the next parameter of a value left unclosed.
//
// Kimi K2 call ids that are only a counter ("0") name the one offered
// tool that fits the arguments, or are reported; a harmony recipient may
// sit in the role header, also when the reply starts inside it
// (" to=functions.x<|channel|>…"); empty <tool_call> blocks and a stray
// leading </tool_call> are stale tags that leave Content.
//
// Qwen3-Coder parameter values end only at a </parameter> followed by the
// next <parameter=, </function> or the end of the call, and a function
// only at a </function> after its last value or before the end of the
// call, so a value may hold those tags literally; a reply cut off inside a value is an attempt with a
// Problem, never a guessed call. Options.CallPrefix applies Ollama's
// template rule: a bare JSON call after text is not a call, and JSON calls
// behind a prefix no family knows ("Action: ```json") are read.
//
// When Options.Tools is non-empty, only calls to offered tools are
// recognised, and a bare JSON object is a call only if it names one. Tags
// mentioned in prose ("use the <tool_call> tag") stay text. Argument values
// written without types (Qwen3-Coder parameters) are converted by the
// tool's JSON Schema. Broken JSON is repaired where that is safe: Python
// literals (single quotes, True/None), trailing commas, raw newlines in
// strings, closing braces missing at the very end.
//
// Parse never panics and runs in time linear in its input: every scan
// charges the bytes it examines to a counter that the tests bound on
// megabyte-sized adversarial inputs (see scan.go and linear_test.go).
package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// Formats reported in Result.Format.
const (
	FormatNone           = "none"
	FormatJSON           = "json"
	FormatJSONFenced     = "json_fenced"
	FormatHermes         = "hermes"
	FormatQwen3Coder     = "qwen3_coder"
	FormatMistral        = "mistral"
	FormatMistralV11     = "mistral_v11"
	FormatLlama3         = "llama3"
	FormatLlamaPythonTag = "llama_python_tag"
	FormatPythonic       = "pythonic"
	FormatDeepSeekV3     = "deepseek_v3"
	FormatDeepSeekV31    = "deepseek_v31"
	FormatHarmony        = "harmony"
	FormatKimiK2         = "kimi_k2"
	FormatGLM45          = "glm45"
	FormatFunctionaryV32 = "functionary_v32"
)

// Options configure Parse.
type Options struct {
	// Tools are the tools offered to the model. When non-empty, a call's
	// name is matched against them exactly, then case-insensitively with
	// '-' and '_' treated alike and a "functions." prefix ignored, and the
	// call carries the offered spelling. Calls to other names are not
	// recognised: their text stays in Content and they are listed in
	// Result.Unmatched.
	Tools []model.ToolSpec
	// CallPrefix is the marker the model's chat template puts before a
	// call (Ollama reads it from the template, e.g. "<tool_call>" or
	// "[TOOL_CALLS]"). When set, Ollama's rule applies: a bare JSON call
	// with text before it is not a call, since the model would have
	// written the prefix. Calls behind any marker are unaffected.
	CallPrefix string
}

// Result is what Parse recovered from a reply.
type Result struct {
	// Calls are the recovered calls in order, with IDs "call_1", "call_2", …
	// and Arguments always a JSON object.
	Calls []model.ToolCall
	// Content is the text left once the calls (and their markers, fences
	// and harmony headers) are removed: the remaining pieces, each trimmed,
	// joined by newlines.
	Content string
	// Reasoning is thinking the reply carried: a leading <think> block or
	// harmony's analysis channel. It is never part of Content.
	Reasoning string
	// Format names the family recognised (one of the Format constants): that
	// of the calls or, when none were recovered, of the failed attempt or
	// the unmatched calls. FormatHarmony also covers harmony replies with
	// text only. FormatNone means plain text.
	Format string
	// Attempted is true when the reply looks like an attempted tool call
	// that could not be recovered: broken JSON inside call markers, markers
	// followed by garbage, a call to a tool that is not offered. It can be
	// true alongside recovered Calls when only some of several failed.
	Attempted bool
	// Problem says what was wrong, addressed to the model, ready to be sent
	// back as a correction.
	Problem string
	// Unmatched are calls that parsed but name a tool not in Options.Tools
	// (IDs are empty). Their text is still in Content.
	Unmatched []model.ToolCall
}

// MarshalJSON encodes the result as
// {"calls":[{"name":…,"arguments":{…}}],"content":…,"format":…}
// — the shape `agentloop parse-toolcalls` prints. It does not escape HTML
// characters, so markup in content stays readable; note that json.Marshal
// re-escapes them, so print the bytes of r.MarshalJSON() (or use an Encoder
// with SetEscapeHTML(false)) to keep them.
func (r Result) MarshalJSON() ([]byte, error) {
	type call struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	out := struct {
		Calls   []call `json:"calls"`
		Content string `json:"content"`
		Format  string `json:"format"`
	}{Calls: make([]call, 0, len(r.Calls)), Content: r.Content, Format: r.Format}
	for _, c := range r.Calls {
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		out.Calls = append(out.Calls, call{Name: c.Name, Arguments: args})
	}
	if out.Format == "" {
		out.Format = FormatNone
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Parse recovers the tool calls written into text.
func Parse(text string, opts Options) Result {
	r, _ := parseCounted(text, opts)
	return r
}

// parseCounted is Parse that also returns the work done (bytes examined),
// for the linear-time tests.
func parseCounted(text string, opts Options) (Result, int64) {
	p := &parser{text: text, tools: newToolIndex(opts.Tools), callPrefix: opts.CallPrefix}
	p.normalize()
	reasoning := p.splitThink()
	o := p.dispatch()
	r := p.finish(o)
	if reasoning != "" {
		if r.Reasoning != "" {
			r.Reasoning = reasoning + "\n" + r.Reasoning
		} else {
			r.Reasoning = reasoning
		}
	}
	return r, p.work
}

type parser struct {
	text       string // the reply, less any leading think block
	tools      *toolIndex
	callPrefix string // Options.CallPrefix
	work       int64
}

// outcome is what one family made of the text.
type outcome struct {
	format    string
	calls     []model.ToolCall
	unmatched []model.ToolCall
	problems  []string
	cuts      []span  // text removed from Content
	content   *string // set by families that build Content themselves
	reasoning string
	// prefixed: the calls were behind Options.CallPrefix.
	prefixed bool
	// moreProblems counts problems beyond maxProblems.
	moreProblems int
}

// maxProblems is how many problems are spelled out; more are only counted.
const maxProblems = 3

// full reports (and counts) a problem that will not be spelled out, so
// callers can skip building an expensive message.
func (o *outcome) full() bool {
	if len(o.problems) >= maxProblems {
		o.moreProblems++
		return true
	}
	return false
}

func (o *outcome) problem(format string, a ...any) {
	if len(o.problems) >= maxProblems {
		o.moreProblems++
		return
	}
	msg := fmt.Sprintf(format, a...)
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	o.problems = append(o.problems, msg)
}

// dispatch tries the families in order. The first that recovers calls wins;
// failing that, the first that saw an attempt (or a call to a tool not
// offered). Harmony wins outright: its channels decide what content is.
func (p *parser) dispatch() *outcome {
	if o := p.parseHarmony(); o != nil {
		return o
	}
	var attempt *outcome
	for _, family := range []func() *outcome{
		p.parseDeepSeek, p.parseKimi, p.parseMistral, p.parsePythonTag, p.parseGLM, p.parseXML, p.parseFunctionaryV32, p.parsePythonic, p.parsePrefixed, p.parseJSON,
	} {
		o := family()
		if o == nil {
			continue
		}
		if len(o.calls) > 0 {
			switch o.format {
			case FormatJSON, FormatJSONFenced, FormatLlama3, FormatHermes:
				p.wrap(o)
			}
			if p.textBeforeBareCall(o) {
				return nil
			}
			return o
		}
		if (len(o.problems) > 0 || len(o.unmatched) > 0) && attempt == nil {
			attempt = o
		}
	}
	return attempt
}

func (p *parser) finish(o *outcome) Result {
	if o == nil {
		p.charge(len(p.text))
		return Result{Content: strings.TrimSpace(p.text), Format: FormatNone}
	}
	r := Result{Format: o.format, Calls: o.calls, Unmatched: o.unmatched, Reasoning: o.reasoning}
	for i := range r.Calls {
		r.Calls[i].ID = "call_" + strconv.Itoa(i+1)
	}
	if o.content != nil {
		r.Content = *o.content
	} else {
		r.Content = p.without(o.cuts)
	}
	if len(o.problems) > 0 {
		r.Attempted = true
		r.Problem = o.problems[0]
		for _, pr := range o.problems[1:] {
			r.Problem += " Also, " + pr
		}
		if o.moreProblems > 0 {
			r.Problem += fmt.Sprintf(" (%d more problems like these.)", o.moreProblems)
		}
	}
	return r
}

// splitThink moves a leading reasoning block out of the text to parse.
func (p *parser) splitThink() string {
	open, close := "<think>", "</think>"
	end := strings.Index(p.text, close)
	p.charge(len(p.text))
	if end < 0 {
		// Magistral and Ministral think in [THINK]…[/THINK].
		open, close = "[THINK]", "[/THINK]"
		end = strings.Index(p.text, close)
	}
	if end < 0 {
		p.charge(len(p.text))
		return ""
	}
	p.charge(end + len(close))
	before := p.text[:end]
	start := strings.Index(before, open)
	if start >= 0 && strings.TrimSpace(before[:start]) != "" {
		return "" // not leading: leave it alone
	}
	reasoning := before
	if start >= 0 {
		reasoning = before[start+len(open):]
	}
	p.text = p.text[end+len(close):]
	return strings.TrimSpace(reasoning)
}

// addCall resolves name against the offered tools and normalises the
// arguments. It records a call or, when explicit (the text was clearly
// meant as a call), a problem. hint is the syntax to suggest.
func (p *parser) addCall(o *outcome, name string, args []byte, explicit bool, hint string) bool {
	name = strings.TrimSpace(name)
	if !validName(name) {
		if explicit {
			o.problem("the tool name %q is not a valid tool name; %s", truncate(name, 64), p.hint(hint, ""))
		}
		return false
	}
	canon, ok := p.tools.resolve(name)
	norm, why := p.normArgs(args)
	if !ok {
		if norm == nil {
			norm = []byte("{}")
		}
		o.unmatched = append(o.unmatched, model.ToolCall{Name: name, Arguments: norm})
		if explicit {
			o.problem("you called the tool %q, which is not available; the available tools are %s.", name, p.tools.list())
		}
		return false
	}
	if norm == nil {
		if explicit {
			o.problem("the arguments of your call to %q %s; %s", canon, why, p.hint(hint, canon))
		}
		return false
	}
	o.calls = append(o.calls, model.ToolCall{Name: canon, Arguments: norm})
	return true
}

// hint returns "write the call as …" for a format.
func (p *parser) hint(format, tool string) string {
	if tool == "" {
		tool = p.tools.example()
	}
	var s string
	switch format {
	case FormatHermes:
		s = `<tool_call>{"name": "` + tool + `", "arguments": {...}}</tool_call>`
	case FormatQwen3Coder:
		s = `<tool_call><function=` + tool + `><parameter=NAME>value</parameter></function></tool_call>`
	case FormatMistral:
		s = `[TOOL_CALLS][{"name": "` + tool + `", "arguments": {...}}]`
	case FormatMistralV11:
		s = `[TOOL_CALLS]` + tool + `[ARGS]{...}`
	case FormatLlamaPythonTag:
		s = `<|python_tag|>{"name": "` + tool + `", "parameters": {...}}`
	case FormatLlama3:
		s = `{"name": "` + tool + `", "parameters": {...}}`
	case FormatPythonic:
		s = `[` + tool + `(arg1='value', arg2=2)]`
	case FormatDeepSeekV3:
		s = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" + tool + "\n```json\n{...}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
	case FormatDeepSeekV31:
		s = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>" + tool + "<｜tool▁sep｜>{...}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
	case FormatHarmony:
		s = `<|start|>assistant<|channel|>commentary to=functions.` + tool + ` <|constrain|>json<|message|>{...}<|call|>`
	case FormatKimiK2:
		s = `<|tool_calls_section_begin|><|tool_call_begin|>functions.` + tool + `:0<|tool_call_argument_begin|>{...}<|tool_call_end|><|tool_calls_section_end|>`
	case FormatGLM45:
		s = `<tool_call>` + tool + "\n<arg_key>NAME</arg_key>\n<arg_value>value</arg_value>\n</tool_call>"
	case FormatFunctionaryV32:
		s = ">>>" + tool + "\n{...}"
	case FormatJSONFenced:
		s = "```json\n{\"name\": \"" + tool + "\", \"arguments\": {...}}\n```"
	default:
		s = `{"name": "` + tool + `", "arguments": {...}}`
	}
	return "write the call as " + s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return snippet(s[:n], 0) + "…"
}

// normArgs turns a decoded "arguments" value into a compact JSON object.
// It returns nil and a reason (completing "the arguments of your call …")
// when the value cannot be an argument object. A JSON string holding an
// object is decoded; null, an empty string and a missing value mean {}.
func (p *parser) normArgs(raw []byte) ([]byte, string) {
	raw = bytes.TrimSpace(raw)
	p.charge(len(raw))
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}"), ""
	}
	switch raw[0] {
	case '{':
		return compactObject(raw), ""
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "are not a valid JSON string"
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return []byte("{}"), ""
		}
		if s[0] != '{' {
			return nil, "are a string, not a JSON object"
		}
		v, err := p.decodeLenient(s, false)
		if err != nil || len(v) == 0 || v[0] != '{' {
			return nil, "are a string that does not hold a valid JSON object"
		}
		return compactObject(v), ""
	case '[':
		return nil, "are an array, but they must be a JSON object of named arguments"
	default:
		return nil, "are " + truncate(string(raw), 40) + ", but they must be a JSON object of named arguments"
	}
}

// compactObject compacts valid JSON and replaces invalid UTF-8.
func compactObject(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return []byte("{}") // unreachable for validated input
	}
	return bytes.ToValidUTF8(buf.Bytes(), []byte("\uFFFD"))
}
