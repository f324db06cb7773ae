package main

import (
	"strings"
	"testing"
)

func TestSafeText(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\nline 2":                    "plain\ttext\nline 2",
		"\x1b[2J\x1b[Hcleared":                   "cleared",
		"copy\x1b]52;c;ZXZpbA==\x07 me":          "copy me",
		"osc\x1b]0;title\x1b\\ st":               "osc st",
		"Allow? [y]es\r\x1b[KApproved":           "Allow? [y]esApproved",
		"bell\x07 del\x7f c1\u009b31mred":        "bell del c1red",
		"unicode ✓ stays, ünïcödé":               "unicode ✓ stays, ünïcödé",
		"dangling escape at the end \x1b":        "dangling escape at the end ",
		"\x1b[31mred\x1b[0m and \x1bcreset text": "red and reset text",
	} {
		if got := safeText(in); got != want {
			t.Errorf("safeText(%q) = %q, want %q", in, got, want)
		}
	}
}

// What a model writes cannot drive the terminal: escape sequences in its
// answer and in tool output are removed from everything printed.
func TestModelTextCannotDriveTheTerminal(t *testing.T) {
	c := newCLI(t)
	script := writeSteps(t,
		`{"tool_calls":[{"name":"execute_command","arguments":{"command":"printf 'out\\033]52;c;ZXZpbA==\\007put'"}}]}`,
		`{"text":"\u001b[2J\u001b]52;c;ZXZpbA==\u0007Done.\rApproved"}`)
	out, errOut, code := c.run("", "run", "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "x")
	if code != exitCompleted || strings.ContainsAny(out+errOut, "\x1b\x07\r") || !strings.Contains(out, "Done.Approved") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	show, _, _ := c.run("", "sessions", "show", sessionID(t, c))
	if strings.ContainsAny(show, "\x1b\x07\r") || !strings.Contains(show, "Done.") {
		t.Fatalf("sessions show %q", show)
	}
}
