package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
)

// FuzzParseStream feeds arbitrary bytes to the stream parser: it must not
// panic, must fail with model.ErrMalformed or succeed, and a success must
// carry tool-call arguments that are valid JSON.
func FuzzParseStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &transport.Reply{Body: bytes.NewReader(data)}
		resp, err := parseStream(r)
		if err != nil {
			if resp != nil {
				t.Fatal("reply with error")
			}
			if !errors.Is(err, model.ErrMalformed) && !isReplyError(err) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		for _, tc := range resp.ToolCalls {
			if !json.Valid(tc.Arguments) {
				t.Fatalf("invalid arguments %q", tc.Arguments)
			}
		}
	})
}

// isReplyError reports an error event the server sent.
func isReplyError(err error) bool {
	return bytes.Contains([]byte(err.Error()), []byte("error event in the reply"))
}
