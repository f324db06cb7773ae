package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The completion scripts load in their shells and complete commands,
// subcommands and flags from the binary's own help.
func TestCompletion(t *testing.T) {
	c := newCLI(t)
	for words, want := range map[string][]string{
		"":              {"run", "sessions", "serve", "completion"},
		"run":           {"--model", "--dir", "--sandbox"},
		"sessions":      {"list", "show", "approve"},
		"sessions list": {"--status", "--json"},
		"serve":         {"--allowed-origins", "--public-url"},
		"keys":          {"create", "list", "revoke"},
	} {
		out, _, code := c.run("", append([]string{"__complete"}, strings.Fields(words)...)...)
		for _, w := range want {
			if code != 0 || !strings.Contains("\n"+out, "\n"+w+"\n") {
				t.Errorf("__complete %s: %q lacks %s", words, out, w)
			}
		}
	}
	if out, _, code := c.run("", "__complete", "run"); code != 0 || strings.Contains(out, "agentloop\n") {
		t.Errorf("run's examples taken for subcommands: %q", out)
	}
	if _, stderr, code := c.run("", "completion", "tcsh"); code != exitUsage || !strings.Contains(stderr, "bash|zsh|fish") {
		t.Errorf("completion tcsh: %d %s", code, stderr)
	}
	// bash: load the script and ask it as bash would, the binary on PATH.
	if bash, err := exec.LookPath("bash"); err == nil {
		dir := binary[:strings.LastIndex(binary, "/")]
		script := `source <(agentloop completion bash); COMP_WORDS=(agentloop sessions l); COMP_CWORD=2; _agentloop; echo "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "-c", script)
		cmd.Env = append(hermeticEnv(t), "PATH="+dir+":/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "list" {
			t.Errorf("bash completion of 'agentloop sessions l': %q %v", out, err)
		}
	}
}
