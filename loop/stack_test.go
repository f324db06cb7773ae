package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// TestSessionStackStaysSmall runs sessions through each provider's client,
// with whole and with streamed replies (the reply decoded at the deepest
// point of a session's stack, then a tool that decodes its arguments with
// encoding/json as user tools do), and checks at each session's last model
// call, on the session's goroutine, that its stack is still 8 KiB. A stack
// doubles when it outgrows itself and is halved by the garbage collector
// only while less than a quarter is used; a session parks some 4 KiB deep
// at every model call, so a stack that once doubled to 16 KiB stays so —
// 8 KiB more for each of thousands of sessions waiting on their models.
func TestSessionStackStaysSmall(t *testing.T) {
	measuringStacks(t)
	const sessions, calls = 8, 4
	add := tool.Func(model.ToolSpec{Name: "add", Description: "adds a and b",
		Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)},
		func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(args, &in); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Output: strconv.Itoa(in.A + in.B)}, nil
		})
	for _, p := range stackProviders {
		srv := httptest.NewServer(cannedReplies(p, calls))
		defer srv.Close()
		m, err := provider.Open(p.spec, provider.Options{BaseURL: srv.URL + p.base, APIKey: "sk-test"})
		if err != nil {
			t.Fatal(err)
		}
		for _, streamed := range []bool{false, true} {
			name := p.spec
			if p.note != "" {
				name += " (" + p.note + ")"
			}
			probe := &stackProbe{Model: m, calls: calls}
			cfg := loop.Config{Model: probe, ModelName: p.spec, Tools: tool.MustRegistry(add), Log: memory.New()}
			if streamed {
				cfg.OnDelta = func(string, model.Delta) {}
				name += ", streamed"
			}
			r, err := loop.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// What encoding/json caches on its first use of a type (deep
			// frames) is made once per process, not by every session.
			if err := runCounted(r, calls); err != nil {
				t.Fatalf("%s: warm-up session: %v", name, err)
			}
			probe.small = 0
			var wg sync.WaitGroup
			for range sessions {
				wg.Go(func() {
					if err := runCounted(r, calls); err != nil {
						t.Errorf("%s: %v", name, err)
					}
				})
			}
			wg.Wait()
			if probe.small != sessions {
				t.Errorf("%s: %d of %d sessions had outgrown an 8 KiB stack by their last model call", name, sessions-probe.small, sessions)
			}
		}
	}
}

// TestSessionStackStaysSmallWithBuiltinTools has the scripted model ask
// for the built-in file, command and git tools in a real workspace and for
// a tool whose schema needs the full validator (the providers' part is the
// test above), and checks, as that test does, that the session's stack is
// still 8 KiB at its last model call: tools run on the session's goroutine.
func TestSessionStackStaysSmallWithBuiltinTools(t *testing.T) {
	measuringStacks(t)
	calls := []struct{ name, args string }{
		{"write_file", `{"path":"notes/a.txt","content":"hello\nworld\n"}`},
		{"read_file", `{"path":"notes/a.txt"}`},
		{"edit_file", `{"path":"notes/a.txt","old_text":"world","new_text":"there"}`},
		{"list_dir", `{"path":"."}`},
		{"search", `{"pattern":"there"}`},
		{"execute_command", `{"command":"echo hi && ls notes"}`},
		{"git_status", `{}`},
		{"git_diff", `{}`},
		{"delete_file", `{"path":"notes/a.txt"}`},
		{"tag_items", `{"items":[{"name":"abc","tags":["x","y"]},3,{"name":"q"}]}`},
	}
	// newSession makes a runner for one session in a fresh workspace (the
	// registry's schemas are compiled here, once, not by the session).
	newSession := func() (*loop.Runner, *stackProbe) {
		ws, err := workspace.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var steps []scripted.Step
		for _, c := range calls {
			steps = append(steps, scripted.Call(c.name, c.args))
		}
		steps = append(steps, scripted.Text("Done."))
		probe := &stackProbe{Model: scripted.NewCompact(&scripted.Script{Name: "tools", Steps: steps}), calls: len(calls)}
		r, err := loop.New(loop.Config{Model: probe, ModelName: "scripted", Tools: tool.MustRegistry(append(assemble.Builtin(ws), nestedSchemaTool())...), Log: memory.New()})
		if err != nil {
			t.Fatal(err)
		}
		return r, probe
	}
	// What the tools set up on first use (compiled patterns, encoding/json's
	// caches) is made once per process, not by every session.
	warm, _ := newSession()
	if err := runCounted(warm, len(calls)); err != nil {
		t.Fatalf("warm-up session: %v", err)
	}
	const sessions = 4
	for i := range sessions {
		r, probe := newSession()
		// On a goroutine of its own, as sessions run: a fresh stack.
		var err error
		done := make(chan struct{})
		go func() { defer close(done); err = runCounted(r, len(calls)) }()
		<-done
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if probe.small != 1 {
			t.Errorf("session %d had outgrown an 8 KiB stack by its last model call (after %d tool calls)", i, len(calls))
		}
	}
}

// measuringStacks readies a test that measures stacks: it skips under the
// race detector, whose instrumentation makes every frame larger, and turns
// off collection for the test, which could shrink a stack that grew.
func measuringStacks(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation makes every frame larger")
	}
	gc := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(gc) })
}

// runCounted runs a session to completion and checks it made calls tool
// calls.
func runCounted(r *loop.Runner, calls int) error {
	st, err := r.Run(context.Background(), loop.Task{Prompt: "do the task"})
	if err == nil && (st.Status != loop.StatusCompleted || st.ToolCallCount != calls) {
		err = fmt.Errorf("status %s (%s), %d tool calls", st.Status, st.Detail, st.ToolCallCount)
	}
	return err
}

// nestedSchemaTool has a schema beyond the registry's fast check (anyOf,
// patterns: as MCP servers' tools often do), so its arguments go through
// the full JSON Schema validator, which recurses deeply.
func nestedSchemaTool() tool.Tool {
	return tool.Func(model.ToolSpec{Name: "tag_items", Description: "tags items",
		Parameters: json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","items":{"anyOf":[
			{"type":"object","properties":{"name":{"type":"string","pattern":"^[a-z]+$"},"tags":{"type":"array","items":{"type":"string","minLength":1}}},"required":["name"]},
			{"type":"integer"}]}}},"required":["items"]}`)},
		func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Result{Output: "tagged"}, nil })
}

// stackProbe is a model that, at a session's last model call (the one
// with calls tool results), checks on the session's goroutine whether its
// stack is still 8 KiB.
type stackProbe struct {
	model.Model
	calls int

	mu    sync.Mutex
	small int // sessions whose stack was 8 KiB at their last call
}

func (p *stackProbe) Generate(ctx context.Context, req *model.Request, stream model.StreamFunc) (*model.Response, error) {
	results := 0
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			results++
		}
	}
	if results == p.calls && stackMoves() {
		p.mu.Lock()
		p.small++
		p.mu.Unlock()
	}
	return p.Model.Generate(ctx, req, stream)
}

// stackMoves reports whether taking 8 KiB more of frames made the
// goroutine's stack grow — copied elsewhere, so that a local's address
// changed: the stack had 8 KiB, not 16 (at the depth of a model call,
// some 3-5 KiB, 8 KiB more fits in 16 but not in 8).
//
//go:noinline
func stackMoves() bool {
	var here byte
	before := uintptr(unsafe.Pointer(&here))
	burnStack(8)
	return uintptr(unsafe.Pointer(&here)) != before
}

// burnStack takes n KiB of stack.
//
//go:noinline
func burnStack(n int) byte {
	var pad [1 << 10]byte
	pad[n] = byte(n)
	if n > 0 {
		pad[0] += burnStack(n - 1)
	}
	return pad[0] + pad[n]
}

// stackProvider is a provider's wire format, served canned.
type stackProvider struct {
	spec, base string // provider.Open's spec, the base URL's path under the server
	note       string // tells apart two cases of one provider
	// results counts the tool results in a request body.
	results string
	// reply is the reply to a conversation with n tool results: a call to
	// add while n < calls, then a final answer; stream is the same as the
	// provider streams it (Content-Type streamType).
	reply, stream func(n, calls int) string
	streamType    string
}

var stackProviders = []stackProvider{
	{spec: "openai/gpt-test", base: "/v1", results: `"role":"tool"`, reply: openaiReply, streamType: "text/event-stream", stream: openaiStream},
	// A whole reply the hand-written decoder declines (a key given twice),
	// decoded by encoding/json instead.
	{spec: "openai/gpt-test", base: "/v1", note: "a reply decoded by encoding/json", results: `"role":"tool"`, reply: func(n, calls int) string {
		return strings.Replace(openaiReply(n, calls), `"model":"gpt-test"`, `"model":"gpt-test","model":"gpt-test"`, 1)
	}, streamType: "text/event-stream", stream: openaiStream},
	{spec: "anthropic/claude-test", results: `"type":"tool_result"`, reply: func(n, calls int) string {
		content, stop := `[{"type":"text","text":"All added."}]`, "end_turn"
		if n < calls {
			content = fmt.Sprintf(`[{"type":"text","text":"Adding."},{"type":"tool_use","id":"toolu_%d","name":"add","input":{"a":%d,"b":%d}}]`, n, n, 100+n)
			stop = "tool_use"
		}
		return fmt.Sprintf(`{"id":"msg_%d","type":"message","role":"assistant","model":"claude-test","content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":12}}`,
			n, content, stop, 40+30*n)
	}, streamType: "text/event-stream", stream: func(n, calls int) string {
		ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
		out := ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, n, 40+30*n))
		out += ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		out += ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"All added."}}`)
		out += ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		stop := "end_turn"
		if n < calls {
			out += ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_%d","name":"add","input":{}}}`, n))
			out += ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":%d,\"b\":%d}"}}`, n, 100+n))
			out += ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
			stop = "tool_use"
		}
		out += ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":12}}`, stop))
		return out + ev("message_stop", `{"type":"message_stop"}`)
	}},
	{spec: "ollama/qwen-test", results: `"role":"tool"`, reply: func(n, calls int) string {
		msg := `{"role":"assistant","content":"All added."}`
		if n < calls {
			msg = fmt.Sprintf(`{"role":"assistant","content":"","tool_calls":[{"id":"call_%d","function":{"index":0,"name":"add","arguments":{"a":%d,"b":%d}}}]}`, n, n, 100+n)
		}
		return fmt.Sprintf(`{"model":"qwen-test","created_at":"2026-01-01T00:00:00Z","message":%s,"done":true,"done_reason":"stop","total_duration":1000,"prompt_eval_count":%d,"eval_count":12}`, msg, 40+30*n)
	}, streamType: "application/x-ndjson", stream: func(n, calls int) string {
		out := `{"model":"qwen-test","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"All"},"done":false}` + "\n"
		if n < calls {
			out += fmt.Sprintf(`{"model":"qwen-test","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_%d","function":{"index":0,"name":"add","arguments":{"a":%d,"b":%d}}}]},"done":false}`, n, n, 100+n) + "\n"
		}
		return out + fmt.Sprintf(`{"model":"qwen-test","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":1000,"prompt_eval_count":%d,"eval_count":12}`, 40+30*n) + "\n"
	}},
}

// openaiReply is the Chat Completions reply to a conversation with n tool
// results: a call to add while n < calls, then a final answer.
func openaiReply(n, calls int) string {
	msg, finish := `{"role":"assistant","content":"All added.","refusal":null}`, "stop"
	if n < calls {
		msg = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"add","arguments":"{\"a\":%d,\"b\":%d}"}}],"refusal":null,"annotations":[]}`, n, n, 100+n)
		finish = "tool_calls"
	}
	return fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","created":1767225600,"model":"gpt-test","choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":%d,"completion_tokens":12,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_1"}`,
		n, msg, finish, 40+30*n, 52+30*n)
}

// openaiStream is openaiReply as Chat Completions streams it.
func openaiStream(n, calls int) string {
	const head = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-test","system_fingerprint":"fp_1","choices":[{"index":0,"delta":`
	out := head + `{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	finish := "stop"
	if n < calls {
		out += head + fmt.Sprintf(`{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":"add","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`, n) + "\n\n"
		out += head + fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":%d,\"b\":%d}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`, n, 100+n) + "\n\n"
		finish = "tool_calls"
	} else {
		out += head + `{"content":"All added."},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	}
	out += head + fmt.Sprintf(`{},"logprobs":null,"finish_reason":%q}],"usage":null}`, finish) + "\n\n"
	out += fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":12,"total_tokens":%d}}`, 40+30*n, 52+30*n) + "\n\n"
	return out + "data: [DONE]\n\n"
}

// cannedReplies answers as p's API does. It reads the request without
// decoding it, so that its own stack stays small.
func cannedReplies(p stackProvider, calls int) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		n := strings.Count(string(body), p.results)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", p.streamType)
			io.WriteString(w, p.stream(n, calls))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, p.reply(n, calls))
	}
}
