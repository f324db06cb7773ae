package ollama

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
// doing the same /api/chat request against the same loopback server,
// NDJSON streaming (one flush per line) and "stream": false; plus the
// stream parser alone on an in-memory body.
//
//	go test -run XXX -bench . -benchmem ./model/ollama

const benchText = 250

func benchStream() (body []byte, chunks int) {
	var b bytes.Buffer
	for i := range benchText {
		fmt.Fprintf(&b, `{"model":"qwen3:8b","created_at":"2025-10-17T23:20:00.%06dZ","message":{"role":"assistant","content":" word%d"},"done":false}`+"\n", i, i)
		chunks++
	}
	b.WriteString(`{"model":"qwen3:8b","created_at":"2025-10-17T23:21:00.000005Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"index":0,"name":"write_file","arguments":{"path":"main.go","content":"package main\n\nfunc main() {}\n"}}}]},"done":false}` + "\n")
	b.WriteString(`{"model":"qwen3:8b","created_at":"2025-10-17T23:21:00.000007Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":3183583458,"load_duration":1334875,"prompt_eval_count":211,"prompt_eval_duration":342546000,"eval_count":257,"eval_duration":2535599000}` + "\n")
	return b.Bytes(), chunks + 2
}

func benchJSON() []byte {
	var text strings.Builder
	for i := range benchText {
		fmt.Fprintf(&text, " word%d", i)
	}
	return []byte(`{"model":"qwen3:8b","created_at":"2025-10-17T23:15:01.102212Z","message":{"role":"assistant","content":"` + text.String() + `","tool_calls":[{"function":{"index":0,"name":"write_file","arguments":{"path":"main.go","content":"package main\n\nfunc main() {}\n"}}}]},"done":true,"done_reason":"stop","total_duration":2174560334,"load_duration":101397084,"prompt_eval_count":182,"prompt_eval_duration":113074791,"eval_count":41,"eval_duration":952479709}`)
}

func benchServer(b *testing.B) *httptest.Server {
	stream, _ := benchStream()
	lines := bytes.SplitAfter(stream, []byte("\n"))
	whole := benchJSON()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("Accept") == "application/json" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = w.Write(whole)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		fl := w.(http.Flusher)
		for _, l := range lines {
			_, _ = w.Write(l)
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
	c := New(Config{BaseURL: srv.URL, Model: "qwen3:8b"})
	req := benchRequest()
	nop := func(model.Delta) {}
	check := func(resp *model.Response, err error) {
		if err != nil || len(resp.ToolCalls) != 1 || resp.Usage.InputTokens == 0 {
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
	bc := &bareClient{url: srv.URL + "/api/chat", hc: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	req := benchRequest()
	check := func(r *bareResult, err error) {
		if err != nil || r.name != "write_file" || r.in == 0 {
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
// and reads the same reply with net/http and encoding/json.
type bareClient struct {
	url string
	hc  *http.Client
}

type bareResult struct {
	text, name string
	args       json.RawMessage
	in, out    int
}

type bareChunk struct {
	Message struct {
		Content   string `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
	Done            bool `json:"done"`
	PromptEvalCount int  `json:"prompt_eval_count"`
	EvalCount       int  `json:"eval_count"`
}

func (c *bareClient) do(req *model.Request, stream bool) (*bareResult, error) {
	type fn struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	type call struct {
		Function fn `json:"function"`
	}
	type msg struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []call `json:"tool_calls,omitempty"`
		ToolName  string `json:"tool_name,omitempty"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	msgs := make([]msg, len(req.Messages))
	for i := range req.Messages {
		m := &req.Messages[i]
		msgs[i] = msg{Role: string(m.Role), Content: m.Content, ToolName: m.ToolName}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if len(args) == 0 || args[0] != '{' {
				args = json.RawMessage("{}")
			}
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, call{fn{tc.Name, args}})
		}
	}
	tools := make([]tool, len(req.Tools))
	for i, t := range req.Tools {
		tools[i].Type = "function"
		tools[i].Function.Name, tools[i].Function.Description, tools[i].Function.Parameters = t.Name, t.Description, t.Parameters
	}
	data, err := json.Marshal(map[string]any{"model": "qwen3:8b", "messages": msgs, "tools": tools, "stream": stream,
		"options": map[string]int{"num_predict": req.MaxTokens}})
	if err != nil {
		return nil, err
	}
	hreq, _ := http.NewRequest("POST", c.url, bytes.NewReader(data))
	hreq.Header.Set("Content-Type", "application/json")
	if stream {
		hreq.Header.Set("Accept", "application/x-ndjson")
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
	var ch bareChunk
	if err := json.NewDecoder(resp.Body).Decode(&ch); err != nil {
		return nil, err
	}
	tc := ch.Message.ToolCalls[0].Function
	return &bareResult{text: ch.Message.Content, name: tc.Name, args: tc.Arguments, in: ch.PromptEvalCount, out: ch.EvalCount}, nil
}

func bareParse(r io.Reader) (*bareResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var text strings.Builder
	var res bareResult
	for sc.Scan() {
		var ch bareChunk
		if err := json.Unmarshal(sc.Bytes(), &ch); err != nil {
			return nil, err
		}
		text.WriteString(ch.Message.Content)
		for _, tc := range ch.Message.ToolCalls {
			res.name, res.args = tc.Function.Name, tc.Function.Arguments
		}
		if ch.Done {
			res.in, res.out = ch.PromptEvalCount, ch.EvalCount
			break
		}
	}
	res.text = text.String()
	return &res, sc.Err()
}
