package main

import (
	"os/exec"
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

// The follow-up command printed for a waiting session works as printed:
// it names the database (and config) the run used.
func TestPrintedFollowUpCommandsWorkAsPrinted(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	script := writeScript(t, `{"steps":[{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"A"}}]},{"text":"wrote a"}]}`)
	_, stderr, code := c.run("", "run", "--model", "script:"+script, "--dir", ws, "write a")
	if code != exitPaused {
		t.Fatalf("run: %d %s", code, stderr)
	}
	i := strings.Index(stderr, "Approve:  ")
	if i < 0 || !strings.Contains(stderr[i:], "--db "+c.db) {
		t.Fatalf("the approve command lacks the database: %s", stderr)
	}
	line := strings.TrimPrefix(strings.SplitN(stderr[i:], "\n", 2)[0], "Approve:  ")
	args := strings.Fields(line)[1:] // as a shell would split it (the paths have no spaces)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(hermeticEnv(t), c.env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "wrote a") {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
}
