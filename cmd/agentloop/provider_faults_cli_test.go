package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store/sqlite"
)

// A provider that keeps failing — rate limited without a hint, 5xx, a
// connection dropped mid-stream, a server that accepts and never answers,
// one that trickles a byte at a time — pauses the session with a message
// naming the provider, its URL and what to do; once the provider is well
// again, `sessions resume` finishes it, and the log holds no torn or
// repeated step.
func TestProviderFaultsPauseAndResume(t *testing.T) {
	chunk := func(content, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return fmt.Sprintf("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q},\"finish_reason\":%s}]}\n\n", content, f)
	}
	faults := map[string]struct {
		serve func(w http.ResponseWriter, r *http.Request)
		says  string
		args  []string
	}{
		"429 without Retry-After": {func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"Rate limit reached for requests"}}`)
		}, "HTTP 429", nil},
		"500": {func(w http.ResponseWriter, r *http.Request) { http.Error(w, "internal error", 500) }, "HTTP 500", nil},
		"502": {func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad gateway", 502) }, "HTTP 502", nil},
		"503": {func(w http.ResponseWriter, r *http.Request) { http.Error(w, "overloaded", 503) }, "HTTP 503", nil},
		"connection dropped mid-stream": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, chunk("", ""))
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, "", nil},
		"accepts and never answers": {func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, "timed out", []string{"--model-timeout", "1s"}},
		"slow trickle": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, b := range []byte(chunk("slow", "")) {
				if _, err := w.Write([]byte{b}); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}, "timed out", []string{"--model-timeout", "1s"}},
	}
	for name, f := range faults {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			healthy, calls := false, 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				ok := healthy
				calls++
				mu.Unlock()
				if !ok {
					f.serve(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, chunk("fine now", "stop")+"data: [DONE]\n\n")
			}))
			defer srv.Close()
			c := newCLI(t)
			args := append([]string{"run", "--model", "openai/gpt-test", "--base-url", srv.URL + "/v1", "--api-key", "k", "--dir", t.TempDir()}, f.args...)
			start := time.Now()
			_, errOut, code := c.run("", append(args, "x")...)
			if code != exitPaused || !strings.Contains(errOut, "paused (model_") {
				t.Fatalf("exit %d after %v\n%s", code, time.Since(start), errOut)
			}
			for _, want := range []string{"openai", srv.URL, "resume", f.says} {
				if !strings.Contains(errOut, want) {
					t.Fatalf("the message lacks %q:\n%s", want, errOut)
				}
			}
			mu.Lock()
			t.Logf("paused after %v, %d calls:\n%s", time.Since(start).Round(time.Millisecond), calls, errOut)
			healthy, calls = true, 0
			mu.Unlock()
			id := sessionID(t, c)
			out, errOut, code := c.run("", "sessions", "resume", "--api-key", "k", id)
			if code != exitCompleted || !strings.Contains(out, "fine now") {
				t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
			}
			mu.Lock()
			if calls != 1 {
				t.Errorf("%d model calls after the resume, want 1", calls)
			}
			mu.Unlock()
			checkLog(t, c.db, id)
		})
	}
}

// checkLog reads a session's log back: gap-free, one start, one end, each
// iteration started once, each model reply recorded once per iteration.
func checkLog(t *testing.T, db, id string) {
	t.Helper()
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	events, err := st.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	started, ended := 0, 0
	iters, replies := map[int]int{}, map[int]int{}
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
		switch d := e.Data.(type) {
		case *loop.SessionStarted:
			started++
		case *loop.SessionEnded:
			ended++
		case *loop.IterationStarted:
			iters[d.N]++
		case *loop.ModelResponded:
			replies[d.Iteration]++
		}
	}
	if started != 1 || ended != 1 {
		t.Fatalf("%d session.started, %d session.ended", started, ended)
	}
	for n, k := range replies {
		if k != 1 {
			t.Fatalf("iteration %d has %d model replies", n, k)
		}
	}
	for n, k := range iters {
		if k != 1 {
			t.Fatalf("iteration %d started %d times", n, k)
		}
	}
}
