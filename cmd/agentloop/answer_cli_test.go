package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session started from a conversation answers with what its model said,
// never with the conversation's own messages: a failed session whose
// model wrote no text has no answer.
func TestFailedSessionFromConversationHasNoBorrowedAnswer(t *testing.T) {
	msgs := filepath.Join(t.TempDir(), "messages.json")
	conv := `[{"role":"user","content":"EARLIER question"},{"role":"assistant","content":"EARLIER reply"},{"role":"user","content":"LAST user text: list the files"}]`
	if err := os.WriteFile(msgs, []byte(conv), 0o644); err != nil {
		t.Fatal(err)
	}
	// One step with a tool call; the wrap-up call after the limit finds
	// the script exhausted and fails, so the model never wrote any text.
	script := writeSteps(t, `{"tool_calls":[{"name":"list_dir","arguments":{}}]}`)
	c := newCLI(t)
	out, errOut, code := c.run("", "run", "--yes", "--max-iterations", "1", "--model", "script:"+script, "--messages", msgs, "--dir", t.TempDir())
	if code != exitLimit {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "EARLIER") || strings.Contains(out, "LAST user text") {
		t.Fatalf("the conversation was reported as the answer: %q", out)
	}
	s := showJSON(t, c, sessionID(t, c))
	if s.Status != "failed" || s.Answer != "" {
		t.Fatalf("%s (%s), answer %q", s.Status, s.Reason, s.Answer)
	}
}
