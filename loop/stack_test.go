package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/tool"
)

// sessionStackLimit is the stack a session's goroutine must fit in. A
// goroutine's stack doubles when it outgrows it and is halved by the
// garbage collector only while less than a quarter is used; a session
// parks some 5 KiB deep at every model call, so a stack that once doubled
// to 16 KiB stays so for the rest of the session — 8 KiB more for each of
// thousands of sessions waiting on their models.
const sessionStackLimit = 8 << 10

// TestSessionStackStaysSmall runs sessions through the OpenAI-compatible
// client (a reply with a tool call decoded at the deepest point of the
// session's stack, then the tool, whose arguments it decodes with
// encoding/json as user tools do) in a child process whose goroutines may
// not grow past sessionStackLimit: one that does ends the child with
// "goroutine stack exceeds" and the frames that took it there.
func TestSessionStackStaysSmall(t *testing.T) {
	if os.Getenv("AGENTLOOP_STACK_CHILD") == "1" {
		runStackChild(t)
		return
	}
	if raceEnabled {
		t.Skip("the race detector's instrumentation makes every frame larger")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSessionStackStaysSmall$", "-test.v")
	cmd.Env = append(os.Environ(), "AGENTLOOP_STACK_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sessions within the stack limit") {
		t.Fatalf("a session outgrew %d bytes of stack (%v):\n%s", sessionStackLimit, err, excerpt(out))
	}
}

// runStackChild is the child: it sets the limit, then runs sessions at once.
func runStackChild(t *testing.T) {
	const sessions, calls = 8, 4
	srv := httptest.NewServer(http.HandlerFunc(cannedOpenAI(calls)))
	defer srv.Close()
	m, err := provider.Open("openai/gpt-test", provider.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	add := tool.Func(model.ToolSpec{Name: "add", Description: "adds a and b",
		Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)},
		func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(args, &in); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Output: strconv.Itoa(in.A + in.B)}, nil
		})
	r, err := loop.New(loop.Config{Model: m, ModelName: "gpt-test", Tools: tool.MustRegistry(add), Log: memory.New()})
	if err != nil {
		t.Fatal(err)
	}
	// One session first: what encoding/json caches on its first use of a
	// type is made once per process, not by every session.
	if st, err := r.Run(t.Context(), loop.Task{Prompt: "add the numbers"}); err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("warm-up session: %v %v", st, err)
	}
	debug.SetMaxStack(sessionStackLimit)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for range sessions {
		wg.Go(func() {
			st, err := r.Run(context.Background(), loop.Task{Prompt: "add the numbers"})
			if err == nil && (st.Status != loop.StatusCompleted || st.ToolCallCount != calls) {
				err = fmt.Errorf("status %s (%s), %d tool calls", st.Status, st.Detail, st.ToolCallCount)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d sessions within the stack limit", sessions)
}

// cannedOpenAI answers chat completions as OpenAI does: a call to add until
// the conversation holds calls tool results, then a final answer. It reads
// the request without decoding it, so that its own stack stays small.
func cannedOpenAI(calls int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		n := strings.Count(string(body), `"role":"tool"`)
		msg := `{"role":"assistant","content":"All added.","refusal":null}`
		finish := "stop"
		if n < calls {
			msg = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"add","arguments":"{\"a\":%d,\"b\":%d}"}}],"refusal":null,"annotations":[]}`, n, n, 100+n)
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1767225600,"model":"gpt-test","choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":%d,"completion_tokens":12,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_1"}`,
			n, msg, finish, 40+30*n, 52+30*n)
	}
}

// excerpt is the start of a child's output: a stack overflow prints every
// goroutine, and the first (the one that overflowed) is what tells.
func excerpt(out []byte) string {
	const max = 8 << 10
	if len(out) > max {
		return string(out[:max]) + "\n…"
	}
	return string(out)
}
