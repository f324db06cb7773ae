// Package fake is an OpenAI-compatible Chat Completions server that plays
// the benchmark's model: for a conversation holding n tool results it asks
// for the n-th call of add while n < K, and gives the final answer when
// n == K. It decides from the messages in the request, so it keeps no
// per-session state and serves any number of sessions at once.
//
// It checks what it is sent and answers HTTP 400 on a request a correct
// loop would not send: a streaming request (it is non-streaming), no add
// tool offered, a tool result that does not answer the call it follows or
// does not hold the right sum, more than K tool results. Every reply
// carries usage.
package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/bench/compare/chatwire"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

// Server is the fake model.
type Server struct {
	// Latency is added to every reply.
	Latency time.Duration

	replies  [workload.K + 1][]byte
	requests atomic.Int64
	rejected atomic.Int64
	waiting  atomic.Int64
	// OnReject, when set, sees every rejected request's reason.
	OnReject func(reason string)

	mu   sync.Mutex
	gate chan struct{} // non-nil while armed: first turns wait on it
}

// New returns a server that waits latency before every reply.
func New(latency time.Duration) *Server {
	s := &Server{Latency: latency}
	for i := range s.replies {
		s.replies[i] = reply(i)
	}
	return s
}

// Hold arms the server: from now on the first request of every session
// (no tool results yet) waits, before its latency, until Release. A
// measurement uses it to look at a process while every one of its sessions
// is waiting on the model.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate == nil {
		s.gate = make(chan struct{})
	}
}

// Release lets every held request go on and disarms the server.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

// Waiting is the number of requests held now.
func (s *Server) Waiting() int64 { return s.waiting.Load() }

// Handler serves the API under /v1 (and at the root): POST
// chat/completions; POST hold and release (see Hold); GET stats, a JSON
// object of the counters.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, p := range []string{"/v1", ""} {
		mux.Handle(p+"/chat/completions", s)
		mux.HandleFunc("POST "+p+"/hold", func(w http.ResponseWriter, _ *http.Request) { s.Hold() })
		mux.HandleFunc("POST "+p+"/release", func(w http.ResponseWriter, _ *http.Request) { s.Release() })
		mux.HandleFunc("GET "+p+"/stats", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(Stats{Requests: s.Requests(), Rejected: s.Rejected(), Waiting: s.Waiting()})
		})
	}
	return mux
}

// Stats is what GET /v1/stats returns.
type Stats struct {
	Requests int64 `json:"requests"`
	Rejected int64 `json:"rejected"`
	Waiting  int64 `json:"waiting"`
}

// Requests and Rejected count the requests served and refused.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Rejected counts the requests answered with HTTP 400.
func (s *Server) Rejected() int64 { return s.rejected.Load() }

// reply is the canned chat.completion for a conversation with n tool
// results.
func reply(n int) []byte {
	msg := chatwire.Message{Role: "assistant"}
	finish := "stop"
	if n < workload.K {
		a, b := workload.Args(n)
		msg.ToolCalls = []chatwire.ToolCall{{
			ID: workload.CallID(n), Type: "function",
			Function: chatwire.FunctionCall{Name: workload.ToolName, Arguments: fmt.Sprintf(`{"a":%d,"b":%d}`, a, b)},
		}}
		finish = "tool_calls"
	} else {
		msg.Content = chatwire.Str(workload.Final)
	}
	prompt := 40 + 30*n
	body, err := json.Marshal(chatwire.Response{
		ID: "chatcmpl-bench-" + strconv.Itoa(n), Object: "chat.completion", Created: 1767225600, Model: workload.ModelName,
		Choices: []chatwire.Choice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   &chatwire.Usage{PromptTokens: prompt, CompletionTokens: 12, TotalTokens: prompt + 12},
	})
	if err != nil {
		panic(err)
	}
	return append(body, '\n')
}

// request is what the server reads of a chat.completions request. Content
// may be a string, an array of parts or null, so it stays raw.
type request struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Functions []struct {
		Name string `json:"name"`
	} `json:"functions"`
}

// ServeHTTP answers POST …/chat/completions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a chat.completions request to /v1/chat/completions", http.StatusMethodNotAllowed)
		return
	}
	s.requests.Add(1)
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.reject(w, "the body is not a JSON chat.completions request: "+err.Error())
		return
	}
	n, problem := check(&req)
	if problem != "" {
		s.reject(w, problem)
		return
	}
	if n == 0 {
		s.mu.Lock()
		gate := s.gate
		s.mu.Unlock()
		if gate != nil {
			s.waiting.Add(1)
			select {
			case <-gate:
				s.waiting.Add(-1)
			case <-r.Context().Done():
				s.waiting.Add(-1)
				return
			}
		}
	}
	if s.Latency > 0 {
		t := time.NewTimer(s.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(s.replies[n])))
	_, _ = w.Write(s.replies[n])
}

// check returns the number of tool results in the conversation, or what is
// wrong with it.
func check(req *request) (n int, problem string) {
	if req.Stream {
		return 0, "this fake server is non-streaming: send stream=false"
	}
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Function.Name == workload.ToolName
	}
	for _, f := range req.Functions {
		offered = offered || f.Name == workload.ToolName
	}
	if !offered {
		return 0, "the add tool is not offered in tools"
	}
	users := 0
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case "user":
			users++
		case "tool":
			if n >= workload.K {
				return 0, fmt.Sprintf("more than %d tool results", workload.K)
			}
			if m.ToolCallID != workload.CallID(n) {
				return 0, fmt.Sprintf("tool result %d answers call %q; want %q", n, m.ToolCallID, workload.CallID(n))
			}
			if !holdsNumber(text(m.Content), workload.Sum(n)) {
				return 0, fmt.Sprintf("tool result %d is %s; want it to hold the sum %d", n, m.Content, workload.Sum(n))
			}
			n++
		}
	}
	if users == 0 {
		return 0, "no user message"
	}
	return n, ""
}

// text returns the text of a content field: a string, or the text parts of
// an array.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return string(raw)
	}
	var b []byte
	for _, p := range parts {
		b = append(b, p.Text...)
		b = append(b, ' ')
	}
	return string(b)
}

// holdsNumber reports whether want appears in s as a whole run of digits
// ("101", `{"result":101}`, `{"sum":101}` all hold 101).
func holdsNumber(s string, want int) bool {
	w := strconv.Itoa(want)
	for i := 0; i < len(s); {
		if s[i] < '0' || s[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if s[i:j] == w {
			return true
		}
		i = j
	}
	return false
}

func (s *Server) reject(w http.ResponseWriter, reason string) {
	s.rejected.Add(1)
	if s.OnReject != nil {
		s.OnReject(reason)
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "fake server: " + reason, "type": "invalid_request_error"}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}
