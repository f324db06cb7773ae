package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// agentloop prints no colour or other escape sequences, on a terminal as
// elsewhere, so NO_COLOR (and a terminal that cannot show them) is
// honoured: the live status line is redrawn with carriage returns only,
// and escape sequences in what a model or tool says are removed. Run
// under a pseudo-terminal (script(1)) so the terminal path is the one
// taken.
var redraw = regexp.MustCompile("\r[^\n]")

func TestNoEscapeSequencesOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is not installed (util-linux)")
	}
	model := writeScript(t, `{"steps":[
		{"text":"\u001b[31mred\u001b[0m and \u001b]52;c;cGF3bmVk\u0007 clipboard","tool_calls":[{"name":"execute_command","arguments":{"command":"printf '\\033[1;32mgreen\\033[0m\\n'"}}],"delay":"300ms"},
		{"text":"done \u001b[1mbold\u001b[0m"}]}`)
	for _, env := range [][]string{{"NO_COLOR=1"}, {"TERM=dumb"}, nil} {
		c := newCLI(t)
		line := strings.Join([]string{binary, "run", "--db", c.db, "--yes", "--dir", t.TempDir(), "--model", "script:" + model, "'say it'"}, " ")
		cmd := exec.Command("script", "-qec", line, "/dev/null")
		cmd.Env = append(hermeticEnv(t), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%q", env, err, out)
		}
		// A carriage return not ending a line is the status line's redraw
		// (the terminal turns each newline into "\r\n").
		if !redraw.MatchString(string(out)) || !strings.Contains(string(out), "done") {
			t.Fatalf("%v: not the terminal's output (no status line, or no answer):\n%q", env, out)
		}
		if !strings.Contains(string(out), "red and") {
			t.Fatalf("%v: the model's text (with its escapes) was not shown:\n%q", env, out)
		}
		if i := strings.IndexByte(string(out), 0x1b); i >= 0 {
			t.Errorf("%v: an escape sequence reached the terminal at %d:\n%q", env, i, out)
		}
	}
}
