package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
	pt "github.com/agentloop/agentloop/model/internal/providertest"
	"github.com/agentloop/agentloop/model/internal/transport"
)

// checkEncoding compares appendRequest with the encoding/json path it
// replaced: same bytes, or the same error.
func checkEncoding(t *testing.T, c *Client, req *model.Request, stream bool) {
	t.Helper()
	want, werr := c.refEncode("gpt-4.1-mini", req, stream)
	got, gerr := c.appendRequest([]byte("junk"), "gpt-4.1-mini", req, stream)
	if werr != nil || gerr != nil {
		if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
			t.Fatalf("errors differ:\n got %v\nwant %v", gerr, werr)
		}
		return
	}
	if !bytes.Equal(got[len("junk"):], want) {
		t.Fatalf("request body\n got %s\nwant %s", got[len("junk"):], want)
	}
}

func TestAppendRequestMatchesEncodingJSON(t *testing.T) {
	temp := func(f float64) *float64 { return &f }
	odd := "<&> \u2028\u2029 \x00\x01\x1f\x7f \b\f\n\r\t \"quoted\" back\\slash \xff\xfe invalid é 😀 \U0010FFFF"
	reqs := map[string]*model.Request{
		"conversation": conversation(),
		"bench":        benchRequest(),
		"empty":        {},
		"odd strings everywhere": {
			Messages: []model.Message{
				{Role: model.Role(odd), Content: odd},
				{Role: model.RoleAssistant, Content: odd, ToolCalls: []model.ToolCall{{ID: odd, Name: odd, Arguments: json.RawMessage(odd)}}},
				{Role: model.RoleTool, ToolCallID: odd, Content: odd},
			},
			Tools: []model.ToolSpec{{Name: odd, Description: odd, Parameters: json.RawMessage(`{"description":"` + "<&>\u2028" + `"}`)}},
		},
		"tool call fields on other roles are dropped": {
			Messages: []model.Message{
				{Role: model.RoleUser, Content: "x", ToolCalls: []model.ToolCall{{ID: "c"}}, ToolCallID: "c"},
				{Role: model.RoleTool},
				{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{}},
				{Role: model.RoleAssistant, Content: "text", ToolCalls: []model.ToolCall{{}, {Arguments: json.RawMessage(" {} ")}}},
			},
		},
		"parameters indented, empty, null": {
			Messages: []model.Message{{Role: model.RoleUser, Content: "x"}},
			Tools: []model.ToolSpec{
				{Name: "a", Parameters: json.RawMessage("{\n  \"type\": \"object\",\n\t\"x\": [1, 2, \"a b\"]\n}\n")},
				{Name: "b", Parameters: json.RawMessage{}},
				{Name: "c"},
				{Name: "d", Parameters: json.RawMessage("null")},
			},
		},
		"invalid parameters":  {Tools: []model.ToolSpec{{Name: "a", Parameters: json.RawMessage(`{"type":`)}}},
		"trailing parameters": {Tools: []model.ToolSpec{{Name: "a", Parameters: json.RawMessage(`{} {}`)}}},
		"negative max tokens": {MaxTokens: -3},
		"temperature 0":       {Temperature: temp(0)},
		"temperature -0":      {Temperature: temp(math.Copysign(0, -1))},
		"temperature tiny":    {Temperature: temp(1e-7)},
		"temperature huge":    {Temperature: temp(1e21)},
		"temperature 0.7":     {Temperature: temp(0.7), MaxTokens: 1 << 40},
		"temperature NaN":     {Temperature: temp(math.NaN())},
		"temperature +Inf":    {Temperature: temp(math.Inf(1))},
	}
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			for _, field := range []string{"max_tokens", "max_completion_tokens"} {
				c := New(Config{Model: "m", MaxTokensField: field})
				checkEncoding(t, c, req, false)
				checkEncoding(t, c, req, true)
			}
		})
	}
}

func FuzzAppendRequest(f *testing.F) {
	f.Add("You are terse.", "call_1", `{"location":"Paris"}`, `{"type":"object"}`, uint8(0), 256, 0.2, false)
	f.Add("<\u2028\xff\x00>", "", "", "", uint8(7), 0, math.NaN(), true)
	f.Add("", "id", " not json ", "{ \"a\" : [ 1 ] }", uint8(3), -1, 1e-9, true)
	roles := []model.Role{model.RoleSystem, model.RoleUser, model.RoleAssistant, model.RoleTool}
	f.Fuzz(func(t *testing.T, content, id, args, params string, shape uint8, maxTokens int, temp float64, stream bool) {
		req := &model.Request{MaxTokens: maxTokens}
		if shape&8 != 0 {
			req.Temperature = &temp
		}
		for i := range 4 {
			m := model.Message{Role: roles[(int(shape)+i)%4], Content: content, ToolCallID: id}
			if shape&16 != 0 && i%2 == 0 {
				m.Content = ""
			}
			if shape&32 != 0 {
				m.ToolCalls = []model.ToolCall{{ID: id, Name: content, Arguments: json.RawMessage(args)}}
			}
			req.Messages = append(req.Messages, m)
		}
		if shape&64 != 0 {
			req.Tools = []model.ToolSpec{{Name: id, Description: content, Parameters: json.RawMessage(params)}}
		}
		c := New(Config{Model: "m"})
		if shape&128 != 0 {
			c = New(Config{Model: "m", MaxTokensField: "max_completion_tokens"})
		}
		checkEncoding(t, c, req, stream)
	})
}

// viaAccumulator parses a whole reply by feeding it through the stream
// accumulator as one chunk: the reference parseJSON's direct path must
// agree with (deltas, their order, IDs, errors).
func (c *Client) viaAccumulator(r *transport.Reply) (*model.Response, error) {
	buf, err := transport.ReadBody(r.Body)
	if err != nil {
		return nil, err
	}
	var w wholeReply
	if err := json.Unmarshal(buf.Bytes(), &w); err != nil {
		return nil, r.Malformed("%s (%v)", transport.DescribeBody(r.MediaType, buf.Bytes()), transport.JSONErr(err))
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		return nil, streamError(r, w.Error)
	}
	if len(w.Choices) == 0 {
		return nil, r.Malformed("the reply has no choices: %q", transport.Excerpt(buf.Bytes(), 120))
	}
	return c.accumulateWhole(r, &w)
}

type parseRun struct {
	resp   *model.Response
	err    string
	deltas []model.Delta
	ids    int
}

// runParse parses body with parse, recording deltas when stream is set.
func runParse(body []byte, mediaType string, stream bool, parse func(*Client, *transport.Reply) (*model.Response, error)) parseRun {
	var run parseRun
	c := New(Config{Model: "m", NewID: func() string { run.ids++; return fmt.Sprintf("gen_%d", run.ids) }})
	r := &transport.Reply{Call: transport.Call{Provider: "openai", URL: "http://x/v1/chat/completions", Model: "m"}, MediaType: mediaType, Body: bytes.NewReader(body)}
	if stream {
		r.SetStream(func(d model.Delta) { run.deltas = append(run.deltas, d) })
	}
	resp, err := parse(c, r)
	run.resp = resp
	if err != nil {
		run.err = err.Error()
	}
	return run
}

func checkParse(t *testing.T, body []byte, mediaType string, oracle, parse func(*Client, *transport.Reply) (*model.Response, error)) {
	t.Helper()
	for _, stream := range []bool{false, true} {
		want := runParse(body, mediaType, stream, oracle)
		got := runParse(body, mediaType, stream, parse)
		if !reflect.DeepEqual(got, want) {
			gj, _ := json.Marshal(got.resp)
			wj, _ := json.Marshal(want.resp)
			t.Fatalf("body %q (stream %v):\n got %s %q %+v ids %d\nwant %s %q %+v ids %d", body, stream, gj, got.err, got.deltas, got.ids, wj, want.err, want.deltas, want.ids)
		}
	}
}

var (
	oracleJSON = (*Client).viaAccumulator
	newJSON    = (*Client).parseJSON
	newSSE     = (*Client).parseStream
	jsonBodies = []string{
		``, ` `, `{}`, `null`, `[]`, `{"choices":[]}`, `{"choices":null}`, `{"choices":[{}]}`, `{"choices":[{"message":{}}]}`,
		`{"error":null,"choices":[{"message":{"content":"hi"}}]}`,
		`{"error":{"message":"Provider returned error","code":502},"choices":[]}`,
		`{"error":"x"}`,
		`{"model":"m2","choices":[{"index":3,"message":{"content":null,"refusal":"no"},"finish_reason":"content_filter"}]}`,
		`{"choices":[{"message":{"content":"","refusal":"no"}}]}`,
		`{"choices":[{"message":{"reasoning_content":"a","reasoning":"b","content":"c"},"finish_reason":"length"}]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f"}},{"id":"x","function":{"name":"g","arguments":" {\"a\":1} "}},{"function":{"name":"h","arguments":"not json"}}]},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f","arguments":"{}"}},{"function":{"arguments":"{\"a\""}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{}}]}}]}`,
		`{"choices":[{"message":{"content":5}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"type":5}]}}],"usage":{"prompt_tokens":"x"}}`,
		`{"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}},"choices":[{"message":{"content":"x"}}]}`,
		`{"usage":{"prompt_tokens":1},"usage":null,"choices":[{"message":{"content":"x"}}]}`,
		`{"choices":[{"message":{"content":"x"}}]} trailing`,
		" \n{\"choices\":[{\"message\":{\"content\":\"x\"}}]}\n\n",
		`{"choices":[{"message":{"content":"x"}}]`,
		`<html><title>Oops</title></html>`,
	}
	sseBodies = []string{
		"", "data: [DONE]\n\n", "data: {}\n\ndata: [DONE]\n\n", "data: {\"choices\":[]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"b\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"c\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
		"data: {\"model\":\"m1\",\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}]}\n\ndata: {\"model\":\"m2\",\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"}\"}}]}}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"f\"}},{\"id\":\"b\",\"function\":{\"name\":\"g\"}},{\"index\":-1,\"function\":{\"name\":\"h\"}},{\"index\":5000,\"id\":\"q\",\"function\":{\"name\":\"i\"}}]}}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":5}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]} {}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":\n\n",
		"data: {\"error\":{\"message\":\"overloaded\",\"code\":\"529\"}}\n\n",
		"data: {\"usage\":{\"prompt_tokens\":3}}\n\ndata: {\"usage\":null,\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\": \"}}]}}]}\n\n",
	}
)

func TestParseJSONMatchesOracle(t *testing.T) {
	bodies := jsonBodies
	for _, name := range []string{"completion_text.json", "completion_tool_calls.json", "error_401.json", "error_404_model.json", "error_429.json", "error_500.html"} {
		bodies = append(bodies, string(pt.Load(t, name)))
	}
	bodies = append(bodies, string(benchJSON()))
	// More tool calls than the accumulator keeps apart.
	var many strings.Builder
	many.WriteString(`{"choices":[{"message":{"tool_calls":[`)
	for i := range maxCallIndex + 5 {
		if i > 0 {
			many.WriteString(",")
		}
		id := ""
		if i%3 == 0 {
			id = fmt.Sprint(i)
		}
		fmt.Fprintf(&many, `{"id":%q,"function":{"name":"f","arguments":"{\"i\":%d}"}}`, id, i)
	}
	many.WriteString(`]}}]}`)
	bodies = append(bodies, many.String())
	for _, b := range bodies {
		for _, mt := range []string{"application/json", "text/html"} {
			checkParse(t, []byte(b), mt, oracleJSON, newJSON)
		}
	}
}

// The stream parser reuses pooled readers and decoders: parsing the same
// body again must give exactly the same result.
func TestParseStreamIsStableAcrossPooledReuse(t *testing.T) {
	bodies := sseBodies
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(b))
	}
	stream, _ := benchStream()
	bodies = append(bodies, string(stream))
	for _, b := range bodies {
		checkParse(t, []byte(b), "text/event-stream", newSSE, newSSE)
	}
}

func FuzzParseJSONMatchesOracle(f *testing.F) {
	for _, b := range jsonBodies {
		f.Add([]byte(b))
	}
	f.Add(benchJSON())
	f.Fuzz(func(t *testing.T, body []byte) { checkParse(t, body, "application/json", oracleJSON, newJSON) })
}

func FuzzParseStreamIsStable(f *testing.F) {
	for _, b := range sseBodies {
		f.Add([]byte(b))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkParse(t, body, "text/event-stream", newSSE, newSSE) })
}

// longRequest is a session 100 turns in: tool calls with arguments, tool
// results of a few KiB, some of them with characters to escape.
func longRequest() *model.Request {
	req := benchRequest()
	for i := range 100 {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			model.Message{Role: model.RoleAssistant, Content: "Reading the next file.", ToolCalls: []model.ToolCall{
				{ID: id, Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"pkg/file%d.go"}`, i))}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Content: strings.Repeat("func f() {\n\treturn \"x\" // <ok>\n}\n", 60)})
	}
	return req
}

// BenchmarkParts compares, in process, the request encoder with the
// encoding/json one it replaced (oracle_test.go), and parseJSON's direct
// path with the stream accumulator.
//
//	go test -run '^$' -bench Parts -benchmem ./model/openai
func BenchmarkParts(b *testing.B) {
	c := New(Config{Model: "m", NewID: func() string { return "id" }})
	for _, r := range []struct {
		name string
		req  *model.Request
	}{{"small", benchRequest()}, {"long", longRequest()}} {
		body, _ := c.refEncode("gpt-4.1-mini", r.req, false)
		b.Run("encode-"+r.name+"/old", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.refEncode("gpt-4.1-mini", r.req, false); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encode-"+r.name+"/new", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				buf := &struct{ B []byte }{make([]byte, 0, requestSize(r.req))}
				var err error
				if buf.B, err = c.appendRequest(buf.B, "gpt-4.1-mini", r.req, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	whole := benchJSON()
	stream, _ := benchStream()
	for _, p := range []struct {
		name  string
		body  []byte
		parse func(*Client, *transport.Reply) (*model.Response, error)
	}{
		{"json/accumulator", whole, oracleJSON}, {"json/direct", whole, newJSON},
		{"stream", stream, newSSE},
	} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.parse(c, &transport.Reply{MediaType: "application/json", Body: bytes.NewReader(p.body)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
