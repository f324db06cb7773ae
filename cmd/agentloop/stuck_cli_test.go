package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Polling a command whose output changes is progress, not repetition; the
// same failing command with the same output is, and the model is told so
// in plain words; the thresholds come from the profile and show in
// sessions show.
func TestStuckDetectionThroughTheCLI(t *testing.T) {
	poll := `{"tool_calls":[{"name":"execute_command","arguments":{"command":"printf x >> progress.txt; cat progress.txt"}}]}`
	c := newCLI(t)
	script := writeSteps(t, poll, poll, poll, poll, poll, `{"text":"The job finished."}`)
	out, errOut, code := c.run("", "run", "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "wait for the job")
	if code != exitCompleted || strings.Contains(errOut, "stuck") {
		t.Fatalf("polling flagged: exit %d\n%s\n%s", code, out, errOut)
	}
	if show, _, _ := c.run("", "sessions", "show", "--json", sessionID(t, c)); !strings.Contains(show, `"stuck_detections": 0`) {
		t.Fatalf("stuck detections recorded:\n%s", show)
	}

	same := `{"tool_calls":[{"name":"execute_command","arguments":{"command":"cat missing.txt"}}]}`
	c = newCLI(t)
	script = writeSteps(t, same, same, same, `{"text":"missing.txt does not exist."}`)
	_, errOut, code = c.run("", "run", "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "read missing.txt")
	if code != exitCompleted {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	id := sessionID(t, c)
	show, _, _ := c.run("", "sessions", "show", "--json", id)
	if !strings.Contains(show, "You are repeating the same tool call and getting the same error") || strings.Contains(show, "repeating repeated_action") {
		t.Fatalf("no plain-language nudge:\n%s", show)
	}
	text, _, _ := c.run("", "sessions", "show", id)
	if !strings.Contains(text, "stuck:     same call and result 4× (an error 3×) → tell the model, then pause · detected 1×") {
		t.Fatalf("sessions show:\n%s", text)
	}

	// A profile that pauses at once after two identical errors.
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("profiles:\n  strict:\n    limits:\n      stuck_error_repeats: 2\n      stuck_nudge: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = newCLI(t)
	script = writeSteps(t, same, same)
	_, errOut, code = c.run("", "run", "--yes", "--config", cfg, "--profile", "strict", "--model", "script:"+script, "--dir", t.TempDir(), "read missing.txt")
	if code != exitPaused || !strings.Contains(errOut, "waiting (stuck)") {
		t.Fatalf("strict profile: exit %d\n%s", code, errOut)
	}
	text, _, _ = c.run("", "sessions", "show", sessionID(t, c))
	if !strings.Contains(text, "(an error 2×) → pause at once · detected 1×") {
		t.Fatalf("sessions show:\n%s", text)
	}
}

// The same failing command whose output differs only in a timestamp and a
// process id is the same error: stuck detection compares what the model
// saw with such identifiers masked, and says so after the third time.
func TestStuckDespiteVaryingIDsThroughTheCLI(t *testing.T) {
	flaky := `{"tool_calls":[{"name":"execute_command","arguments":{"command":"echo \"$(date -u +%Y-%m-%dT%H:%M:%S.%NZ) connection refused (pid $$)\"; exit 1"}}]}`
	c := newCLI(t)
	script := writeSteps(t, flaky, flaky, flaky, `{"text":"The service does not start."}`)
	_, errOut, code := c.run("", "run", "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "start the service")
	if code != exitCompleted {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	id := sessionID(t, c)
	show, _, _ := c.run("", "sessions", "show", "--json", id)
	var st struct {
		StuckDetections int `json:"stuck_detections"`
		Iterations      []struct {
			ToolCalls []struct{ Output string } `json:"tool_calls"`
		}
	}
	if err := json.Unmarshal([]byte(show), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Iterations) < 3 || st.Iterations[0].ToolCalls[0].Output == st.Iterations[1].ToolCalls[0].Output {
		t.Fatalf("the outputs did not differ; the test shows nothing:\n%s", show)
	}
	if st.StuckDetections != 1 || !strings.Contains(show, "You are repeating the same tool call and getting the same error") {
		t.Fatalf("no stuck detection for the same error with varying ids:\n%s", show)
	}
}
