package anthropic

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
// doing the same Messages request against the same loopback server,
// streaming (one flush per event) and not; plus the stream parser alone on
// an in-memory body.
//
//	go test -run XXX -bench . -benchmem ./model/anthropic

const benchText, benchArgs = 200, 60

func benchStream() (body []byte, chunks int) {
	var b bytes.Buffer
	ev := func(name, data string) {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data)
		chunks++
	}
	ev("message_start", `{"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":1200,"output_tokens":2},"content":[],"stop_reason":null}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("ping", `{"type": "ping"}`)
	for i := range benchText {
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word%d"}}`, i))
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"write_file","input":{}}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"main.go\", \"content\": \""}}`)
	for i := range benchArgs {
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"line %d\\n"}}`, i))
	}
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"}"}}`)
	ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":300}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.Bytes(), chunks
}

func benchJSON() []byte {
	var text strings.Builder
	for i := range benchText {
		fmt.Fprintf(&text, " word%d", i)
	}
	var args strings.Builder
	for i := range benchArgs {
		fmt.Fprintf(&args, `line %d\n`, i)
	}
	return []byte(`{"id":"msg_01Aq9w938a90dw8q","model":"claude-sonnet-4-5-20250929","stop_reason":"tool_use","stop_sequence":null,"role":"assistant","type":"message","content":[{"type":"text","text":"` + text.String() + `"},{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"write_file","input":{"path":"main.go","content":"` + args.String() + `"}}],"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":1200,"output_tokens":300}}`)
}

func benchServer(b *testing.B) *httptest.Server {
	stream, _ := benchStream()
	events := bytes.SplitAfter(stream, []byte("\n\n"))
	whole := benchJSON()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("Accept") == "application/json" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(whole)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
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
	c := New(Config{BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-sonnet-4-5"})
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
		pt.Loop(b, chunks, func() { check(parseStream(&transport.Reply{Body: bytes.NewReader(body)})) })
	})
}

func BenchmarkBare(b *testing.B) {
	srv := benchServer(b)
	_, chunks := benchStream()
	bc := &bareClient{url: srv.URL + "/v1/messages", hc: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
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
// and reads the same reply with net/http and encoding/json.
type bareClient struct {
	url string
	hc  *http.Client
}

type bareResult struct {
	text, id, name, args string
}

func (c *bareClient) do(req *model.Request, stream bool) (*bareResult, error) {
	var system string
	var msgs []map[string]any
	for _, m := range req.Messages {
		var blocks []map[string]any
		role := string(m.Role)
		switch m.Role {
		case model.RoleSystem:
			system += m.Content
			continue
		case model.RoleTool:
			role = "user"
			blocks = append(blocks, map[string]any{"type": "tool_result", "tool_use_id": m.ToolCallID, "content": m.Content, "is_error": m.IsError})
		case model.RoleAssistant:
			for _, r := range m.Reasoning {
				if r.Type == "thinking" {
					blocks = append(blocks, map[string]any{"type": "thinking", "thinking": r.Text, "signature": r.Signature})
				} else {
					blocks = append(blocks, map[string]any{"type": r.Type, "data": r.Data})
				}
			}
			if m.Content != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": m.Content})
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": tc.Arguments})
			}
		default:
			blocks = append(blocks, map[string]any{"type": "text", "text": m.Content})
		}
		if n := len(msgs); n > 0 && msgs[n-1]["role"] == role {
			msgs[n-1]["content"] = append(msgs[n-1]["content"].([]map[string]any), blocks...)
			continue
		}
		msgs = append(msgs, map[string]any{"role": role, "content": blocks})
	}
	tools := make([]map[string]any, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.Parameters}
	}
	body := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": system, "messages": msgs, "tools": tools}
	if stream {
		body["stream"] = true
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	hreq, _ := http.NewRequest("POST", c.url, bytes.NewReader(data))
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("X-Api-Key", "sk-ant-test")
	hreq.Header.Set("Anthropic-Version", "2023-06-01")
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
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	var res bareResult
	for _, b := range out.Content {
		res.text += b.Text
		if b.Type == "tool_use" {
			res.id, res.name, res.args = b.ID, b.Name, string(b.Input)
		}
	}
	return &res, nil
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
		var ev struct {
			Type         string `json:"type"`
			ContentBlock struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		if err := json.Unmarshal(line[6:], &ev); err != nil {
			return nil, err
		}
		switch ev.Type {
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				res.id, res.name = ev.ContentBlock.ID, ev.ContentBlock.Name
			}
		case "content_block_delta":
			text.WriteString(ev.Delta.Text)
			args.WriteString(ev.Delta.PartialJSON)
		}
		if ev.Type == "message_stop" {
			break
		}
	}
	res.text, res.args = text.String(), args.String()
	return &res, sc.Err()
}
