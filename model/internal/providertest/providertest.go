// Package providertest runs fake model servers on loopback for the
// provider tests: scripted replies (status, headers, body written event by
// event or byte by byte, hangs), request recording, and a per-provider
// request validator that answers 400 — and fails the test — when a request
// would be rejected by the real API.
package providertest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/model/internal/transport"
)

// Reply is one scripted response.
type Reply struct {
	Status int               // default 200
	Header map[string]string // e.g. Content-Type, Retry-After
	Body   []byte
	// Split writes the body in pieces with a flush after each: "" writes it
	// at once, "events" after every blank line (SSE) or newline (NDJSON),
	// "bytes" a few bytes at a time.
	Split string
	// HangBefore blocks before the status line until the client leaves;
	// HangAfter writes the body and then blocks without ending it.
	HangBefore, HangAfter bool
	// Abort drops the connection after the body, without ending the
	// response properly.
	Abort bool
	// OnRequest runs when the request arrives.
	OnRequest func()
}

// Validator checks a request body the way the real API would. It returns a
// description of the first problem, or "" when the API would accept it.
type Validator func(r *http.Request, body []byte) string

// Server is a fake provider endpoint.
type Server struct {
	*httptest.Server
	t         testing.TB
	validate  Validator
	errorBody func(msg string) []byte

	mu       sync.Mutex
	replies  []Reply
	requests [][]byte
}

// New starts a server that validates each request with validate (400 with
// errorBody(problem) and a test failure when it finds one) and answers with
// replies in order, repeating the last.
func New(t testing.TB, validate Validator, errorBody func(string) []byte, replies ...Reply) *Server {
	s := &Server{t: t, validate: validate, errorBody: errorBody, replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Hits is the number of requests served.
func (s *Server) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Request returns the body of request i.
func (s *Server) Request(i int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, body)
	rep := Reply{Status: 200}
	if len(s.replies) > 0 {
		rep = s.replies[min(n, len(s.replies)-1)]
	}
	s.mu.Unlock()

	if s.validate != nil {
		if problem := s.validate(r, body); problem != "" {
			s.t.Errorf("request %d would be rejected by the real API: %s\nbody: %s", n, problem, body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(s.errorBody(problem))
			return
		}
	}
	if rep.OnRequest != nil {
		rep.OnRequest()
	}
	if rep.HangBefore {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status == 0 {
		rep.Status = 200
	}
	w.WriteHeader(rep.Status)
	fl, _ := w.(http.Flusher)
	for _, piece := range split(rep.Body, rep.Split) {
		if _, err := w.Write(piece); err != nil {
			return
		}
		if fl != nil && rep.Split != "" {
			fl.Flush()
		}
	}
	if rep.Abort {
		if fl != nil {
			fl.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	if rep.HangAfter {
		if fl != nil {
			fl.Flush()
		}
		<-r.Context().Done()
	}
}

func split(b []byte, how string) [][]byte {
	switch how {
	case "events":
		sep := []byte("\n\n")
		if !bytes.Contains(b, sep) {
			sep = []byte("\n")
		}
		var out [][]byte
		for len(b) > 0 {
			i := bytes.Index(b, sep)
			if i < 0 {
				return append(out, b)
			}
			out = append(out, b[:i+len(sep)])
			b = b[i+len(sep):]
		}
		return out
	case "bytes":
		var out [][]byte
		for len(b) > 0 {
			n := min(len(b), 7)
			out = append(out, b[:n])
			b = b[n:]
		}
		return out
	}
	return [][]byte{b}
}

// Load reads testdata/name.
func Load(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sleeps records the waits of a retry policy without waiting.
type Sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

// Policy returns a retry policy with max attempts that sleeps instantly,
// jitters to exactly half the backoff and reads a fixed clock.
func (s *Sleeps) Policy(max int) transport.Retry {
	return transport.Retry{
		MaxAttempts: max,
		Sleep: func(ctx context.Context, d time.Duration) error {
			s.mu.Lock()
			s.d = append(s.d, d)
			s.mu.Unlock()
			return ctx.Err()
		},
		Now:  func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) },
		Rand: func() float64 { return 0.5 },
	}
}

// Waits returns the recorded waits.
func (s *Sleeps) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}
