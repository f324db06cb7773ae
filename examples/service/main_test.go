package main

import (
	"strings"
	"testing"
)

func TestServiceExample(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"1 session.started", "tool.finished", "session.ended", "completed (completed): I wrote hello.txt."} {
		if !strings.Contains(got, want) {
			t.Fatalf("output lacks %q:\n%s", want, got)
		}
	}
}
