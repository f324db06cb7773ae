package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
	pt "github.com/agentloop/agentloop/model/internal/providertest"
	"github.com/agentloop/agentloop/model/internal/transport"
)

// Benchmarks: this client against a bare net/http + encoding/json client
// doing the same request against the same loopback server, streaming (SSE,
// one flush per event) and not; plus the stream parser alone on an
// in-memory body, where the client's own overhead is not hidden by HTTP.
//
//	go test -run XXX -bench . -benchmem ./model/openai

const benchText, benchArgs = 200, 60

// benchStream is a reply of benchText content chunks and one tool call
// whose arguments arrive in benchArgs fragments, then finish, usage, DONE.
func benchStream() (body []byte, chunks int) {
	var b bytes.Buffer
	ev := func(delta string, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4.1-mini-2025-04-14","service_tier":"default","system_fingerprint":"fp_b376dfbbd5","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}],"usage":null}`+"\n\n", delta, f)
		chunks++
	}
	ev(`{"role":"assistant","content":"","refusal":null}`, "")
	for i := range benchText {
		ev(fmt.Sprintf(`{"content":" word%d"}`, i), "")
	}
	ev(`{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"write_file","arguments":""}}]}`, "")
	ev(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"main.go\", \"content\": \""}}]}`, "")
	for i := range benchArgs {
		ev(fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":"line %d\\n"}}]}`, i), "")
	}
	ev(`{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}`, "")
	ev(`{}`, "tool_calls")
	b.WriteString(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4.1-mini-2025-04-14","choices":[],"usage":{"prompt_tokens":812,"completion_tokens":300,"total_tokens":1112,"prompt_tokens_details":{"cached_tokens":768}}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes(), chunks + 1
}

func benchJSON() []byte {
	var text strings.Builder
	for i := range benchText {
		fmt.Fprintf(&text, " word%d", i)
	}
	var args strings.Builder
	args.WriteString(`{"path": "main.go", "content": "`)
	for i := range benchArgs {
		fmt.Fprintf(&args, `line %d\n`, i)
	}
	args.WriteString(`"}`)
	a, _ := json.Marshal(args.String())
	return []byte(`{"id":"chatcmpl-abc123","object":"chat.completion","created":1699896916,"model":"gpt-4.1-mini-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"` + text.String() + `","tool_calls":[{"id":"call_abc123","type":"function","function":{"name":"write_file","arguments":` + string(a) + `}}],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":812,"completion_tokens":300,"total_tokens":1112,"prompt_tokens_details":{"cached_tokens":768}}}`)
}

func benchServer(b *testing.B) *httptest.Server {
	stream, _ := benchStream()
	events := bytes.SplitAfter(stream, []byte("\n\n"))
	whole := benchJSON()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		// Both clients ask for a stream in Accept as well as in the body.
		if r.Header.Get("Accept") == "application/json" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(whole)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, e := range events {
			_, _ = w.Write(e)
			fl.Flush()
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchRequest() *model.Request {
	req := conversation()
	req.Tools = append(req.Tools, model.ToolSpec{Name: "write_file", Description: "Write a file.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)})
	return req
}

func BenchmarkClient(b *testing.B) {
	srv := benchServer(b)
	_, chunks := benchStream()
	c := New(Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "gpt-4.1-mini"})
	req := benchRequest()
	nop := func(model.Delta) {}
	check := func(resp *model.Response, err error) {
		if err != nil || len(resp.ToolCalls) != 1 || !json.Valid(resp.ToolCalls[0].Arguments) {
			b.Fatal(resp, err)
		}
	}
	b.Run("stream", func(b *testing.B) {
		pt.Loop(b, chunks, func() { check(c.Generate(context.Background(), req, nop)) })
	})
	b.Run("json", func(b *testing.B) {
		pt.Loop(b, 0, func() { check(c.Generate(context.Background(), req, nil)) })
	})
	b.Run("parse", func(b *testing.B) {
		body, _ := benchStream()
		pt.Loop(b, chunks, func() { check(c.parseStream(&transport.Reply{Body: bytes.NewReader(body)})) })
	})
}

func BenchmarkBare(b *testing.B) {
	srv := benchServer(b)
	_, chunks := benchStream()
	bc := &bareClient{url: srv.URL + "/v1/chat/completions", hc: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	req := benchRequest()
	check := func(r *bareResult, err error) {
		if err != nil || r.name != "write_file" || !json.Valid([]byte(r.args)) {
			b.Fatal(r, err)
		}
	}
	b.Run("stream", func(b *testing.B) {
		pt.Loop(b, chunks, func() { check(bc.do(req, true)) })
	})
	b.Run("json", func(b *testing.B) {
		pt.Loop(b, 0, func() { check(bc.do(req, false)) })
	})
	b.Run("parse", func(b *testing.B) {
		body, _ := benchStream()
		pt.Loop(b, chunks, func() { check(bareParse(bytes.NewReader(body))) })
	})
}

// bareClient is the baseline: the least code that sends the same request
// and reads the same reply with net/http and encoding/json, no retries,
// timeouts or checks.
type bareClient struct {
	url string
	hc  *http.Client
}

type bareResult struct {
	text, id, name, args string
}

func (c *bareClient) do(req *model.Request, stream bool) (*bareResult, error) {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	type msg struct {
		Role       string  `json:"role"`
		Content    *string `json:"content"`
		ToolCalls  []call  `json:"tool_calls,omitempty"`
		ToolCallID string  `json:"tool_call_id,omitempty"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	body := map[string]any{"model": "gpt-4.1-mini", "max_tokens": req.MaxTokens}
	msgs := make([]msg, len(req.Messages))
	for i := range req.Messages {
		m := &req.Messages[i]
		msgs[i] = msg{Role: string(m.Role), Content: &m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, call{ID: tc.ID, Type: "function", Function: fn{tc.Name, string(tc.Arguments)}})
		}
	}
	tools := make([]tool, len(req.Tools))
	for i, t := range req.Tools {
		tools[i].Type = "function"
		tools[i].Function.Name, tools[i].Function.Description, tools[i].Function.Parameters = t.Name, t.Description, t.Parameters
	}
	body["messages"], body["tools"] = msgs, tools
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	hreq, _ := http.NewRequest("POST", c.url, bytes.NewReader(data))
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Authorization", "Bearer sk-test")
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if stream {
		return bareParse(resp.Body)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []call `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	m := out.Choices[0].Message
	return &bareResult{text: m.Content, id: m.ToolCalls[0].ID, name: m.ToolCalls[0].Function.Name, args: m.ToolCalls[0].Function.Arguments}, nil
}

func bareParse(r io.Reader) (*bareResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var text, args strings.Builder
	var res bareResult
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		line = line[6:]
		if string(line) == "[DONE]" {
			break
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(line, &ch); err != nil {
			return nil, err
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			for _, tc := range c.Delta.ToolCalls {
				if tc.ID != "" {
					res.id = tc.ID
				}
				if tc.Function.Name != "" {
					res.name = tc.Function.Name
				}
				args.WriteString(tc.Function.Arguments)
			}
		}
	}
	res.text, res.args = text.String(), args.String()
	return &res, sc.Err()
}
