package scripted

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/agentloop/agentloop/model"
)

// FuzzParse checks that Parse never panics, and that any script it accepts
// plays without panicking and streams valid deltas.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(examplesDir, "*.json"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"steps":[{"error":{"kind":"retryable","status":429,"retry_after":"1s"}},{"tool_calls":[{"name":"x","raw_arguments":"{"}]}],"repeat":true,"stream_chunk":1}`))
	f.Add([]byte(`{"steps":[{"text":"é🙂","stream_chunk":1,"expect":{"message_count":1,"last_message_role":"user"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.json", data)
		if err != nil {
			return
		}
		if len(s.Steps) == 0 {
			t.Fatal("Parse accepted a script without steps")
		}
		for i := range s.Steps {
			s.Steps[i].Delay = 0
		}
		m := NewCompact(s)
		req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
		for range len(s.Steps) + 1 {
			m.Generate(t.Context(), req, func(d model.Delta) {
				// Parsed text is valid UTF-8 (encoding/json replaces bad
				// bytes), so a bad delta means a chunk split a character.
				if !utf8.ValidString(d.Text) || !utf8.ValidString(d.ArgumentsFragment) {
					t.Errorf("delta %+v is not valid UTF-8", d)
				}
			})
		}
		_ = m.Err()
	})
}
