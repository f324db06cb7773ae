package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/agentloop/agentloop/telemetry/otlptest"
)

// jsonLines parses every line of a command's stderr as a JSON object.
func jsonLines(t *testing.T, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %q\n%s", i+1, line, text)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("line %d has no %s: %q", i+1, k, line)
			}
		}
		out = append(out, m)
	}
	return out
}

// agentloop serve --log-format json writes nothing but JSON lines to
// stderr, its own messages included (where it listens, why it stops); a
// line about a session carries session_id, and, while the session's
// spans are exported, the trace_id of its trace. A session paused by one
// server and resumed by the next is followed through both servers' logs.
func TestServeLogsJSONWithSessionAndTraceIDs(t *testing.T) {
	recv := otlptest.Start()
	defer recv.Close()
	c := newCLI(t)
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL)
	ws := t.TempDir()
	var steps []string
	for i := range 4 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"x"}}],"delay":"150ms"}`, i))
	}
	script := writeSteps(t, append(steps, `{"text":"all written"}`)...)
	args := []string{"--allow-script-models", "--yes", "--workspaces", ws, "--log-format", "json", "--log-level", "debug"}

	s := c.serve(args...)
	code, out := s.post(t, "/v1/sessions", fmt.Sprintf(`{"task":"write","model":"script:%s"}`, script))
	if code != 201 {
		t.Fatalf("create: %d %s", code, out)
	}
	var r struct{ ID string }
	json.Unmarshal([]byte(out), &r)
	sseIDs(t, s.url, r.ID, "", 2)
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, s.errText())
	}
	first := s.errText()

	s2 := c.serve(args...)
	if st := s2.waitFor(t, r.ID, "completed"); st != "completed" {
		t.Fatalf("after the restart: %s\n%s", st, s2.errText())
	}
	resp, err := http.Get(s2.url + "/v1/sessions/" + r.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s2.cmd.Process.Signal(syscall.SIGTERM)
	if code := s2.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, s2.errText())
	}

	trace := ""
	for _, sp := range recv.Spans() {
		if sp.Attrs["gen_ai.conversation.id"] == r.ID {
			if trace != "" && sp.TraceID != trace {
				t.Fatalf("the session's spans are in traces %s and %s", trace, sp.TraceID)
			}
			trace = sp.TraceID
		}
	}
	if trace == "" {
		t.Fatal("no span of the session was exported")
	}
	var listening, resumed, requests int
	for _, server := range []string{first, s2.errText()} {
		for _, line := range jsonLines(t, server) {
			msg, _ := line["msg"].(string)
			path, _ := line["path"].(string)
			about := strings.Contains(path, r.ID) || msg == "resumed session"
			if strings.Contains(msg, "listening on http://") {
				listening++
			}
			if msg == "resumed session" {
				resumed++
			}
			if strings.Contains(path, r.ID) {
				requests++
			}
			if about && (line["session_id"] != r.ID || line["trace_id"] != trace) {
				t.Errorf("a line about session %s (trace %s): %v", r.ID, trace, line)
			}
		}
	}
	if listening != 2 || resumed != 1 || requests == 0 {
		t.Fatalf("%d listening lines, %d resumed, %d requests of the session\n%s\n%s", listening, resumed, requests, first, s2.errText())
	}
}

// A log level or format serve does not know is a usage error naming the
// ones it does.
func TestServeRejectsUnknownLogSettings(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{{"--log-level", "loud"}, {"--log-format", "yaml"}} {
		_, errOut, code := c.run("", append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, args[0]) {
			t.Errorf("%v: exit %d\n%s", args, code, errOut)
		}
	}
	c.env = append(c.env, "AGENTLOOP_LOG_LEVEL=loud")
	if _, errOut, code := c.run("", "serve", "--addr", "127.0.0.1:0"); code != exitUsage || !strings.Contains(errOut, "--log-level") {
		t.Errorf("AGENTLOOP_LOG_LEVEL=loud: exit %d\n%s", code, errOut)
	}
}

// agentloop worker takes the same log settings: under --log-format json
// even its failure to reach Temporal is a JSON line (level ERROR).
func TestWorkerLogsJSON(t *testing.T) {
	c := newCLI(t)
	_, errOut, code := c.run("", "worker", "--temporal", "127.0.0.1:1", "--log-format", "json", "--log-level", "warn")
	if code != exitFailed {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	lines := jsonLines(t, errOut)
	if last := lines[len(lines)-1]; last["level"] != "ERROR" || !strings.Contains(last["msg"].(string), "connecting to Temporal at 127.0.0.1:1") {
		t.Fatalf("last line %v", last)
	}
	if _, errOut, code := c.run("", "worker", "--temporal", "127.0.0.1:1", "--log-level", "loud"); code != exitUsage || !strings.Contains(errOut, "--log-level") {
		t.Fatalf("--log-level loud: exit %d\n%s", code, errOut)
	}
}
