package transport

import (
	"errors"
	"testing"

	"github.com/agentloop/agentloop/model"
)

func TestApart(t *testing.T) {
	want := &model.Response{Text: "hi"}
	resp, err := Apart(func() (*model.Response, error) { return want, nil })
	if resp != want || err != nil {
		t.Fatalf("Apart = %v, %v", resp, err)
	}
	boom := errors.New("boom")
	if _, err := Apart(func() (*model.Response, error) { return nil, boom }); err != boom {
		t.Fatalf("error = %v, want boom", err)
	}
	defer func() {
		if v := recover(); v != "read panicked" {
			t.Fatalf("recovered %v, want the panic of read", v)
		}
	}()
	Apart(func() (*model.Response, error) { panic("read panicked") })
	t.Fatal("a panic in read was not raised again")
}

// BenchmarkApart is the cost of reading a reply on a goroutine of its own.
func BenchmarkApart(b *testing.B) {
	resp := &model.Response{}
	read := func() (*model.Response, error) { return resp, nil }
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			read()
		}
	})
	b.Run("apart", func(b *testing.B) {
		for b.Loop() {
			Apart(read)
		}
	})
}
