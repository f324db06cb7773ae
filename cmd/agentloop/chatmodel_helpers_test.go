package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// assistantTurns counts the assistant messages in a chat request: the
// steps the session has already taken.
func assistantTurns(msgs []any) int {
	n := 0
	for _, m := range msgs {
		if mm, ok := m.(map[string]any); ok && mm["role"] == "assistant" {
			n++
		}
	}
	return n
}

// writeCall is an assistant message calling write_file once.
func writeCall(step int, path, content string) map[string]any {
	args, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
		"id": fmt.Sprintf("call_%d", step), "type": "function", "function": map[string]any{"name": "write_file", "arguments": string(args)}}}}
}

// replyChat answers an OpenAI chat completion request with msg (content
// and at most one tool call), as a stream of chunks when stream is set.
func replyChat(w http.ResponseWriter, model string, stream bool, msg map[string]any) {
	finish := "stop"
	if msg["tool_calls"] != nil {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
	if !stream {
		json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	delta := map[string]any{"role": "assistant"}
	if c, ok := msg["content"]; ok {
		delta["content"] = c
	}
	if calls, ok := msg["tool_calls"].([]any); ok {
		c := calls[0].(map[string]any)
		c["index"] = 0
		delta["tool_calls"] = []any{c}
	}
	for _, chunk := range []map[string]any{
		{"id": "c", "object": "chat.completion.chunk", "model": model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}},
		{"id": "c", "object": "chat.completion.chunk", "model": model, "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, "usage": usage},
	} {
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// fetchJSON GETs url into v (when v is not nil) and returns the status
// code.
func fetchJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

// startEditSession creates ws with seed.txt = "seed\n" and starts a
// session on s that edits the files there; it returns the session's id.
func startEditSession(t *testing.T, s *serving, ws string) string {
	t.Helper()
	os.MkdirAll(ws, 0o755)
	if err := os.WriteFile(filepath.Join(ws, "seed.txt"), []byte("seed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := s.post(t, "/v1/sessions", fmt.Sprintf(`{"task":"edit the files","workspace":%q}`, ws))
	if code != 201 {
		t.Fatalf("create: %d %s", code, out)
	}
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("create: %v: %s", err, out)
	}
	return created.ID
}

// rewoundMarks reads session id's answer and its steps as "number:rewound"
// in order, space-separated.
func rewoundMarks(t *testing.T, url, id string) (answer, marks string) {
	t.Helper()
	var state struct {
		Answer     string `json:"answer"`
		Iterations []struct {
			Number  int  `json:"number"`
			Rewound bool `json:"rewound"`
		} `json:"iterations"`
	}
	fetchJSON(t, url+"/v1/sessions/"+id, &state)
	var out []string
	for _, it := range state.Iterations {
		out = append(out, fmt.Sprintf("%d:%v", it.Number, it.Rewound))
	}
	return state.Answer, strings.Join(out, " ")
}
