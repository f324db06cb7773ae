package ownstack

import (
	"errors"
	"testing"
)

func TestRun(t *testing.T) {
	if v, err := Run(func() (int, error) { return 42, nil }); v != 42 || err != nil {
		t.Fatalf("Run = %v, %v", v, err)
	}
	boom := errors.New("boom")
	if _, err := Run(func() (int, error) { return 0, boom }); err != boom {
		t.Fatalf("error = %v, want boom", err)
	}
	if err := Do(func() error { return boom }); err != boom {
		t.Fatalf("Do = %v, want boom", err)
	}
	defer func() {
		if v := recover(); v != "f panicked" {
			t.Fatalf("recovered %v, want the panic of f", v)
		}
	}()
	Run(func() (int, error) { panic("f panicked") })
	t.Fatal("a panic in f was not raised again")
}

// BenchmarkRun is the cost of the hop.
func BenchmarkRun(b *testing.B) {
	f := func() (int, error) { return 1, nil }
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			f()
		}
	})
	b.Run("own-stack", func(b *testing.B) {
		for b.Loop() {
			Run(f)
		}
	})
}
