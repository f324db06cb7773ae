package fake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/bench/compare/chatwire"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

func post(t *testing.T, s *Server, body []byte) (int, []byte) {
	t.Helper()
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
	return w.Code, w.Body.Bytes()
}

func TestConversation(t *testing.T) {
	s := New(0)
	for n := 0; n <= workload.K; n++ {
		code, body := post(t, s, conversation(n))
		if code != http.StatusOK {
			t.Fatalf("after %d tool results: HTTP %d: %s", n, code, body)
		}
		var resp chatwire.Response
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Object != "chat.completion" || resp.Usage == nil || resp.Usage.TotalTokens == 0 || len(resp.Choices) != 1 {
			t.Fatalf("after %d tool results: reply %s", n, body)
		}
		msg := resp.Choices[0].Message
		if n < workload.K {
			a, b := workload.Args(n)
			want := chatwire.ToolCall{ID: workload.CallID(n), Type: "function", Function: chatwire.FunctionCall{Name: "add",
				Arguments: `{"a":` + itoa(a) + `,"b":` + itoa(b) + `}`}}
			if len(msg.ToolCalls) != 1 || msg.ToolCalls[0] != want || msg.Content != nil || resp.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("after %d tool results: reply %s; want one call %+v", n, body, want)
			}
		} else if msg.Content == nil || *msg.Content != workload.Final || len(msg.ToolCalls) != 0 || resp.Choices[0].FinishReason != "stop" {
			t.Fatalf("after %d tool results: reply %s; want the final answer", n, body)
		}
	}
	if s.Requests() != workload.K+1 || s.Rejected() != 0 {
		t.Fatalf("requests %d rejected %d", s.Requests(), s.Rejected())
	}
}

func TestRejects(t *testing.T) {
	good := string(conversation(2))
	cases := []struct{ name, body, want string }{
		{"not json", "{", "not a JSON"},
		{"streaming", strings.Replace(good, `{"model":"bench"`, `{"model":"bench","stream":true`, 1), "non-streaming"},
		{"no tool offered", strings.Replace(good, `"name":"add","description"`, `"name":"sub","description"`, 1), "not offered"},
		{"wrong sum", strings.Replace(good, `"content":"101"`, `"content":"100"`, 1), "hold the sum 101"},
		{"wrong call id", strings.Replace(good, `"tool_call_id":"call_1"`, `"tool_call_id":"call_9"`, 1), `answers call \"call_9\"`},
		{"no user", strings.Replace(good, `"role":"user"`, `"role":"system"`, 1), "no user message"},
		{"too many results", string(conversation(workload.K + 1)), "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.body == good {
				t.Fatal("the case did not change the request")
			}
			code, body := post(t, New(0), []byte(c.body))
			if code != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
				t.Fatalf("HTTP %d %s; want 400 mentioning %q", code, body, c.want)
			}
		})
	}
}

func TestToolResultForms(t *testing.T) {
	for _, content := range []string{`"101"`, `"{\"result\":101}"`, `[{"type":"text","text":"101"}]`} {
		body := strings.Replace(string(conversation(1)), `"content":"101"`, `"content":`+content, 1)
		if code, out := post(t, New(0), []byte(body)); code != http.StatusOK {
			t.Errorf("content %s: HTTP %d %s", content, code, out)
		}
	}
	for _, content := range []string{`"1010"`, `null`, `"10 1"`} {
		body := strings.Replace(string(conversation(1)), `"content":"101"`, `"content":`+content, 1)
		if code, _ := post(t, New(0), []byte(body)); code != http.StatusBadRequest {
			t.Errorf("content %s: HTTP %d; want 400", content, code)
		}
	}
}

func TestHold(t *testing.T) {
	s := New(0)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	postURL := func(path string, body []byte) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, _ := postURL("/v1/hold", nil); code != http.StatusOK {
		t.Fatalf("hold: HTTP %d", code)
	}
	done := make(chan int, 3)
	for range 3 {
		go func() { code, _ := postURL("/v1/chat/completions", conversation(0)); done <- code }()
	}
	// A later turn is not held.
	if code, body := postURL("/v1/chat/completions", conversation(3)); code != http.StatusOK {
		t.Fatalf("later turn: HTTP %d %s", code, body)
	}
	for s.Waiting() < 3 {
		select {
		case code := <-done:
			t.Fatalf("a first turn was answered (HTTP %d) while held", code)
		default:
		}
		runtime.Gosched()
	}
	resp, err := http.Get(srv.URL + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Waiting != 3 || st.Requests != 4 {
		t.Fatalf("stats %+v %v", st, err)
	}
	resp.Body.Close()
	if code, _ := postURL("/v1/release", nil); code != http.StatusOK {
		t.Fatalf("release: HTTP %d", code)
	}
	for range 3 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("held request: HTTP %d", code)
		}
	}
	// Released: first turns pass again.
	if code, _ := postURL("/v1/chat/completions", conversation(0)); code != http.StatusOK {
		t.Fatalf("after release: HTTP %d", code)
	}
}
