package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A resumed session keeps the endpoint and approval mode it was started
// with: resuming without --base-url and --yes still talks to the same
// server and runs write tools without asking.
func TestResumeKeepsEndpointAndApproval(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		call := n
		mu.Unlock()
		if call <= 2 {
			<-r.Context().Done() // the first two calls time out: the session pauses
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			f := "null"
			if finish != "" {
				f = `"` + finish + `"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, f)
		}
		if call == 3 {
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"out.txt\",\"content\":\"hi\"}"}}]}`, "")
			chunk(`{}`, "tool_calls")
		} else {
			chunk(`{"role":"assistant","content":"wrote out.txt"}`, "")
			chunk(`{}`, "stop")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	ws := t.TempDir()
	c := newCLI(t)
	c.env = append(c.env, "OPENAI_API_KEY=sk-test")
	_, errOut, code := c.run("", "run", "--yes", "--model", "openai/gpt-test", "--base-url", "http://user:secret@"+strings.TrimPrefix(srv.URL, "http://")+"/v1",
		"--model-timeout", "300ms", "--dir", ws, "write out.txt")
	if code != exitPaused {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	id := sessionID(t, c)
	if events, _, _ := c.run("", "sessions", "show", "--events", id); strings.Contains(events, "secret") || !strings.Contains(events, `"approval":"auto"`) {
		i := strings.Index(events, "\"endpoint\"")
		t.Fatalf("recorded start: %s", events[max(i, 0):min(len(events), max(i, 0)+300)])
	}
	out, errOut, code := c.run("", "sessions", "resume", id)
	if code != exitCompleted || !strings.Contains(out, "wrote out.txt") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("out.txt: %q %v", b, err)
	}
}

// A malformed reply is a provider fault: tried again, then the session
// pauses (resumable) instead of failing for good.
func TestMalformedRepliesPauseTheSession(t *testing.T) {
	for name, bad := range map[string]func(w http.ResponseWriter){
		"an HTML page with status 200": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>Welcome to nginx!</body></html>")
		},
		"garbage SSE": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {not json\n\n")
		},
		"a stream with no finish and no [DONE]": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"par\"},\"finish_reason\":null}]}\n\n")
		},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			healthy := false
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				ok := healthy
				mu.Unlock()
				if !ok {
					bad(w)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"fine now\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			}))
			t.Cleanup(srv.Close)
			c := newCLI(t)
			_, errOut, code := c.run("", "run", "--model", "openai/gpt-test", "--base-url", srv.URL+"/v1", "--api-key", "k", "--dir", t.TempDir(), "x")
			if code != exitPaused || !strings.Contains(errOut, "paused (model_error)") {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			mu.Lock()
			healthy = true
			mu.Unlock()
			out, errOut, code := c.run("", "sessions", "resume", "--api-key", "k", sessionID(t, c))
			if code != exitCompleted || !strings.Contains(out, "fine now") {
				t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
			}
		})
	}
}

// A session resumes the way it was recorded, from anywhere: run from one
// directory with a relative script path, --dir . and Ollama settings, it
// resumes from another directory with no flags and sends the same
// num_ctx and streaming choice to the same server.
func TestResumeFromElsewhereUsesTheRecordedSpec(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		call := len(bodies)
		mu.Unlock()
		if call <= 2 {
			<-r.Context().Done() // the first two calls time out: the session pauses
			return
		}
		fmt.Fprint(w, `{"model":"qwen3:8b","message":{"role":"assistant","content":"done here"},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":2}`)
	}))
	t.Cleanup(srv.Close)
	start := t.TempDir()
	c := newCLI(t)
	c.dir = start
	_, errOut, code := c.run("", "run", "--model", "ollama/qwen3:8b", "--base-url", srv.URL, "--num-ctx", "4096", "--model-timeout", "300ms", "--dir", ".", "look around")
	if code != exitPaused {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	c.dir = t.TempDir()
	out, errOut, code := c.run("", "sessions", "resume", sessionID(t, c))
	if code != exitCompleted || !strings.Contains(out, "done here") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	last := bodies[len(bodies)-1]
	if !strings.Contains(last, `"num_ctx":4096`) || !strings.Contains(last, `"stream":false`) {
		t.Fatalf("resumed request: %s", last)
	}
	show, _, _ := c.run("", "sessions", "show", "--json", sessionID(t, c))
	if real, _ := filepath.EvalSymlinks(start); !strings.Contains(show, `"workspace": "`+start) && !strings.Contains(show, `"workspace": "`+real) {
		t.Fatalf("workspace not recorded as %s:\n%.600s", start, show)
	}
}
