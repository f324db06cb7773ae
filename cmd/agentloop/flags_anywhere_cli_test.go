package main

import (
	"strings"
	"testing"
)

// Flags after the task are flags, not words of the task; "--" ends them.
func TestFlagsAfterTheTask(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[{"text":"hi from the script","expect":{"last_message_contains":"say hi"}}]}`)
	out, stderr, code := c.run("", "run", "say hi", "--model", "script:"+script, "--dir", t.TempDir(), "--json")
	if code != 0 || !strings.Contains(out, "hi from the script") {
		t.Fatalf("flags after the task: %d\n%s\n%s", code, out, stderr)
	}
	show, _, _ := c.run("", "sessions", "show", "--json", sessionID(t, c))
	if strings.Contains(show, `"task": "say hi --model`) || !strings.Contains(show, `"task": "say hi"`) {
		t.Fatalf("the task took the flags in: %.400s", show)
	}
	script2 := writeScript(t, `{"steps":[{"text":"ok","expect":{"last_message_contains":"--not-a-flag"}}]}`)
	if _, stderr, code := c.run("", "run", "--model", "script:"+script2, "--dir", t.TempDir(), "--", "echo", "--not-a-flag"); code != 0 {
		t.Fatalf("after --: %d %s", code, stderr)
	}
}

// version says what was built; help CMD is CMD's help.
func TestVersionAndHelp(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, code := c.run("", args...)
		if code != 0 || !strings.HasPrefix(out, "agentloop ") || !strings.Contains(out, "go1.") {
			t.Fatalf("%v: %d %q", args, code, out)
		}
	}
	_, stderr, code := c.run("", "help", "run")
	if code != 0 || !strings.Contains(stderr, "Usage: agentloop run") {
		t.Fatalf("help run: %d %q", code, stderr)
	}
}
