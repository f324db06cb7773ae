package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/sqlite"
)

// The example runs its session to completion, and once it has closed the
// store the database holds the whole session: a new process opening the
// file finds it ended, with the file it wrote.
func TestEmbed(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "sessions.db")
	var out strings.Builder
	if err := embed(t.Context(), db, dir, &out); err != nil {
		t.Fatalf("embed: %v", err)
	}
	if got := out.String(); got != "completed (completed) after 2 steps: I wrote hello.txt.\n" {
		t.Fatalf("output %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hello.txt")); err != nil || string(b) != "hello, world\n" {
		t.Fatalf("hello.txt: %q %v", b, err)
	}
	s, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sums, err := s.List(t.Context(), store.Filter{})
	if err != nil || len(sums) != 1 {
		t.Fatalf("sessions in the database: %v %v", sums, err)
	}
	events, err := s.Load(t.Context(), sums[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := loop.Fold(events)
	if err != nil || st.Status != loop.StatusCompleted || !slices.ContainsFunc(events, func(e loop.Event) bool { return e.Type == loop.TypeToolFinished }) {
		t.Fatalf("the recorded session: %v %v", st.Status, err)
	}
}
