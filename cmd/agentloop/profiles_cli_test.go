package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// --profile strict works without a config file: stuck detection pauses
// for a person at the third identical call, and the session carries the
// profile's token budget and timeout.
func TestBuiltinStrictProfile(t *testing.T) {
	c := newCLI(t)
	loop := writeScript(t, `{"repeat": true, "steps": [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}]}`)
	out, errOut, code := c.run("", "run", "--profile", "strict", "--json", "--yes", "--dir", t.TempDir(), "--model", "script:"+loop, "look around")
	if code != exitPaused {
		t.Fatalf("exit %d, want paused (%d)\n%s", code, exitPaused, errOut)
	}
	var st struct {
		Status, Reason, Profile string
		Iterations              []json.RawMessage
		Limits                  struct {
			BudgetTokens int    `json:"budget_tokens"`
			Timeout      string `json:"timeout"` // seconds on the wire, e.g. "600s"
			StuckRepeats int    `json:"stuck_repeats"`
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Reason != "stuck" || len(st.Iterations) != 3 || st.Profile != "strict" {
		t.Errorf("paused %q after %d steps under profile %q; want stuck after 3 under strict", st.Reason, len(st.Iterations), st.Profile)
	}
	if st.Limits.BudgetTokens != 50000 || st.Limits.Timeout != "600s" || st.Limits.StuckRepeats != 3 {
		t.Errorf("limits %+v", st.Limits)
	}
	if _, errOut, code := c.run("", "run", "--profile", "strcit", "--model", "script:"+loop, "x"); code != exitFailed && code != exitUsage || !strings.Contains(errOut, `did you mean "strict"`) {
		t.Errorf("a misspelt profile: %d %s", code, errOut)
	}
}
