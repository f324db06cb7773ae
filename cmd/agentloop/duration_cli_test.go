package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Durations in JSON are strings of seconds ("600s", "0.002s"), in run
// --json, sessions show --json and the event log. A database written before
// that, whose session.started holds its limits as nanoseconds, shows the
// same durations.
func TestDurationsInJSONAreSecondsAndOldLogsReadTheSame(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps": [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}, {"text": "looked", "finish_reason": "stop"}]}`)
	out, errOut, code := c.run("", "run", "--json", "--yes", "--dir", t.TempDir(), "--model", "script:"+script,
		"--timeout", "10m", "--model-timeout", "90s", "--tool-timeout", "1m30s", "look around")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	var st struct {
		ID       string
		Duration string
		Limits   struct {
			Timeout          string `json:"timeout"`
			ModelCallTimeout string `json:"model_call_timeout"`
			ToolCallTimeout  string `json:"tool_call_timeout"`
		}
		Iterations []struct {
			Duration  string
			ToolCalls []struct {
				Duration string
			} `json:"tool_calls"`
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if l := st.Limits; l.Timeout != "600s" || l.ModelCallTimeout != "90s" || l.ToolCallTimeout != "90s" {
		t.Errorf("limits %+v, want 600s, 90s, 90s", l)
	}
	seconds := regexp.MustCompile(`^\d+(\.\d+)?s$`)
	if len(st.Iterations) != 2 || len(st.Iterations[0].ToolCalls) != 1 {
		t.Fatalf("steps %+v, want 2 with a call in the first", st.Iterations)
	}
	for what, d := range map[string]string{"session": st.Duration, "step 1": st.Iterations[0].Duration,
		"step 2": st.Iterations[1].Duration, "the call": st.Iterations[0].ToolCalls[0].Duration} {
		if !seconds.MatchString(d) {
			t.Errorf("%s's duration %q is not seconds such as \"1.5s\"", what, d)
		}
	}

	show := func() (state, events string) {
		t.Helper()
		state, errOut, code := c.run("", "sessions", "show", st.ID, "--json")
		if code != 0 {
			t.Fatalf("sessions show --json: exit %d\n%s", code, errOut)
		}
		events, errOut, code = c.run("", "sessions", "show", st.ID, "--events")
		if code != 0 {
			t.Fatalf("sessions show --events: exit %d\n%s", code, errOut)
		}
		return state, events
	}
	stateNow, eventsNow := show()
	if !strings.Contains(eventsNow, `"limits":{"max_iterations":`) || !strings.Contains(eventsNow, `"timeout":"600s","model_call_timeout":"90s","tool_call_timeout":"90s"`) {
		t.Errorf("session.started's limits are not in seconds:\n%s", eventsNow)
	}

	if n := ageDurations(t, c.db); n != 3 {
		t.Fatalf("rewrote %d durations as nanoseconds, want 3", n)
	}
	stateOld, eventsOld := show()
	if stateOld != stateNow {
		t.Errorf("the state from nanosecond limits differs:\n%s\nwant\n%s", stateOld, stateNow)
	}
	if eventsOld != eventsNow {
		t.Errorf("the events from nanosecond limits differ:\n%s\nwant\n%s", eventsOld, eventsNow)
	}
}

// ageDurations rewrites the duration strings in a SQLite database's stored
// events as the nanosecond numbers agentloop wrote before, as a database
// from then holds them, and returns how many it rewrote.
func ageDurations(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, events FROM event_batches`)
	if err != nil {
		t.Fatal(err)
	}
	batches := map[int64][]byte{}
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			t.Fatal(err)
		}
		batches[id] = b
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	duration := regexp.MustCompile(`"(timeout|model_call_timeout|tool_call_timeout)":"([^"]*)"`)
	n := 0
	for id, b := range batches {
		// A batch is frames of "<type> <version> <time> <length>\n<payload>\n".
		var aged []byte
		for len(b) > 0 {
			head, rest, _ := bytes.Cut(b, []byte{'\n'})
			fields := strings.Fields(string(head))
			size, err := strconv.Atoi(fields[len(fields)-1])
			if err != nil || len(fields) != 4 {
				t.Fatalf("batch %d: frame header %q", id, head)
			}
			payload := duration.ReplaceAllFunc(rest[:size], func(m []byte) []byte {
				sub := duration.FindSubmatch(m)
				d, err := time.ParseDuration(string(sub[2]))
				if err != nil {
					t.Fatalf("stored duration %s: %v", m, err)
				}
				n++
				return fmt.Appendf(nil, `"%s":%d`, sub[1], int64(d))
			})
			aged = fmt.Appendf(aged, "%s %s %s %d\n%s\n", fields[0], fields[1], fields[2], len(payload), payload)
			b = rest[size+1:]
		}
		if _, err := db.Exec(`UPDATE event_batches SET events = ? WHERE id = ?`, aged, id); err != nil {
			t.Fatal(err)
		}
	}
	return n
}
