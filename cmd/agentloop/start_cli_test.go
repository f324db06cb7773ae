package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// startedSpec is the session.started event of a session, as the log has it.
func startedSpec(t *testing.T, c *cli, id string) map[string]any {
	t.Helper()
	out, errOut, code := c.run("", "sessions", "show", "--events", id)
	if code != 0 {
		t.Fatalf("sessions show --events %s: %d %s", id, code, errOut)
	}
	first, _, _ := strings.Cut(out, "\n")
	var e struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal([]byte(first), &e); err != nil || e.Type != "session.started" {
		t.Fatalf("first event of %s: %v %s", id, err, first)
	}
	return e.Data
}

// A start asked of the local run and of a server (run --server) is made a
// session by the same normalisation: the same model, mode, limits the
// request names, fallback models and approval are recorded.
func TestLocalAndServerStartsAgree(t *testing.T) {
	script := writeSteps(t, `{"text":"done"}`)
	args := []string{"run", "--yes", "--model", "script:" + script, "--mode", "thinking", "--fallback-models", "openai/gpt-4.1-mini, anthropic/claude-sonnet-4-5",
		"--thinking", "low", "--budget-tokens", "90000", "--budget-usd", "2.5", "--timeout", "7m", "--label", "team=docs", "say done"}

	local := newCLI(t)
	if _, errOut, code := local.run("", append(args, "--dir", t.TempDir())...); code != exitCompleted {
		t.Fatalf("local run: %d\n%s", code, errOut)
	}
	mine := startedSpec(t, local, sessionID(t, local))

	server := newCLI(t)
	s := server.serve("--yes", "--allow-script-models", "--workspaces", t.TempDir())
	remote := &cli{t: t, db: server.db, env: []string{"AGENTLOOP_SERVER=" + s.url}}
	if _, errOut, code := remote.run("", args...); code != exitCompleted {
		t.Fatalf("run --server: %d\n%s", code, errOut)
	}
	theirs := startedSpec(t, server, sessionID(t, server))

	field := func(spec map[string]any, path ...string) string {
		var v any = spec
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	for _, path := range [][]string{{"model"}, {"mode"}, {"fallback_models"}, {"approval"}, {"limits", "max_iterations"}, {"limits", "context_tokens"},
		{"limits", "budget_tokens"}, {"limits", "budget_usd"}, {"limits", "timeout"}, {"labels", "team"}, {"model_options", "thinking"}} {
		if a, b := field(mine, path...), field(theirs, path...); a != b {
			t.Errorf("%s: local %s, server %s", strings.Join(path, "."), a, b)
		}
	}
	if got := field(mine, "limits", "max_iterations"); got != "10" {
		t.Errorf("thinking mode: max_iterations %s, want 10", got)
	}
	if got := field(theirs, "limits", "budget_tokens") + field(theirs, "limits", "timeout") + field(theirs, "labels", "team") + field(theirs, "model_options", "thinking"); got != `90000"420s""docs""low"` {
		t.Errorf("what run --server sent: budget, timeout, label, thinking: %s", got)
	}
	if got := field(mine, "fallback_models"); got != `["openai/gpt-4.1-mini","anthropic/claude-sonnet-4-5"]` {
		t.Errorf("fallback models %s", got)
	}
}

// What the shared normalisation refuses, the local run refuses before
// anything is recorded, naming the field and what to give instead.
func TestLocalStartRefusesWhatAServerRefuses(t *testing.T) {
	c := newCLI(t)
	script := writeSteps(t, `{"text":"done"}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fallback-models", "qwen3:8b"}, "fallback_models[0]: model \"qwen3:8b\": write it as PROVIDER/NAME"},
		{[]string{"--label", strings.Repeat("k", 65) + "=v"}, "keys of 1-64 characters"},
		{[]string{"--yes", "--verify", " "}, "verify[0]: a command of 1 to 4096 bytes"},
		{[]string{"--thinking", "a lot"}, "use low, medium, high"},
	} {
		args := append([]string{"run", "--dir", t.TempDir(), "--model", "script:" + script}, tc.args...)
		_, errOut, code := c.run("", append(args, "say done")...)
		if code != exitFailed || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, want %d with %q\n%s", tc.args, code, exitFailed, tc.want, errOut)
		}
	}
	if out, _, _ := c.run("", "sessions", "list", "--json"); strings.TrimSpace(out) != "[]" && strings.TrimSpace(out) != "null" {
		t.Errorf("a refused start recorded a session: %s", out)
	}
}
