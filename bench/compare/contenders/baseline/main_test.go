package main

import (
	"net/http/httptest"
	"testing"

	"github.com/agentloop/agentloop/bench/compare/fake"
	"github.com/agentloop/agentloop/bench/compare/harness"
)

func TestSessions(t *testing.T) {
	srv := httptest.NewServer(fake.New(0))
	defer srv.Close()
	rt, err := newRuntime(t.Context(), harness.Env{BaseURL: srv.URL + "/v1", HTTPClient: harness.NewHTTPClient(10), Dir: t.TempDir()}, durable{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := harness.Once(t.Context(), rt); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkSession runs whole sessions against the fake model served in
// this process: the floor for the agentloop contender's BenchmarkSession.
func BenchmarkSession(b *testing.B) {
	srv := httptest.NewServer(fake.New(0))
	defer srv.Close()
	rt, err := newRuntime(b.Context(), harness.Env{BaseURL: srv.URL + "/v1", HTTPClient: harness.NewHTTPClient(10), Dir: b.TempDir()}, durable{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := harness.Once(b.Context(), rt); err != nil {
			b.Fatal(err)
		}
	}
}
