package durable_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/internal/durable"
)

// WriteFile replaces the file whole, owner-only, and leaves nothing
// beside it; a directory that is not there is an error, not a new file
// elsewhere.
func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "note.json")
	for _, data := range []string{`{"a":1}`, `{"b":2}`} {
		if err := durable.WriteFile(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", info.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files in the directory, want the one written", len(entries))
	}
	if err := durable.WriteFile(filepath.Join(dir, "missing", "note.json"), []byte("x")); err == nil {
		t.Fatal("writing into a directory that does not exist succeeded")
	}
}
