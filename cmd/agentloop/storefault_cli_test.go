package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

// PostgreSQL restarted while a served session runs (every connection cut,
// the database down for a second): the session goes on once the database
// is back — or pauses saying why and is resumed — and its log has no gap,
// no step twice.
func TestPostgresRestartedMidSession(t *testing.T) {
	pg := pgtest.Own(t)
	c := newCLI(t)
	c.db = pg.URL
	ws := t.TempDir()
	s := c.serve("--workspaces", ws, "--yes", "--lease-ttl", "2s")
	const steps = 12
	var script []string
	for i := range steps {
		script = append(script, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}],"delay":"250ms"}`, i, i))
	}
	model := writeScript(t, `{"steps":[`+strings.Join(append(script, `{"text":"wrote them all"}`), ",")+`]}`)
	var created struct{ ID string }
	if code := apiCall(t, "POST", s.url+"/v1/sessions", fmt.Sprintf(`{"task":"write files","model":"script:%s","workspace":"w","max_iterations":20}`, model), &created); code != 201 {
		t.Fatalf("create: %d", code)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var sum struct {
			Iteration int `json:"current_iteration"`
		}
		apiCall(t, "GET", s.url+"/v1/sessions/"+created.ID, "", &sum)
		if sum.Iteration >= 3 {
			break
		}
		if time.Now().After(deadline) {
			var raw map[string]any
			apiCall(t, "GET", s.url+"/v1/sessions/"+created.ID, "", &raw)
			t.Fatalf("the session did not reach step 3: %v", raw)
		}
	}
	if err := pg.Restart(time.Second); err != nil {
		t.Fatal(err)
	}
	status := ""
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var sum struct{ Status, Reason string }
		if apiCall(t, "GET", s.url+"/v1/sessions/"+created.ID, "", &sum) != 200 {
			continue
		}
		status = sum.Status + " " + sum.Reason
		if sum.Status == "paused" {
			t.Logf("paused (%s) by the restart; resuming", sum.Reason)
			apiCall(t, "POST", s.url+"/v1/sessions/"+created.ID+"/resume", `{}`, nil)
		}
		if sum.Status == "completed" {
			break
		}
	}
	if !strings.HasPrefix(status, "completed") {
		t.Fatalf("after the restart the session is %q\n%s", status, s.errText())
	}
	events := allEvents(t, s.url, created.ID)
	finished := map[string]int{}
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
		if e.Type == "tool.finished" {
			var d struct {
				CallID string `json:"call_id"`
			}
			_ = json.Unmarshal(e.Data, &d)
			if finished[d.CallID]++; finished[d.CallID] > 1 {
				t.Fatalf("tool call %s finished twice", d.CallID)
			}
		}
	}
	if !strings.Contains(s.errText(), "session stopped: it is taken up again") {
		t.Errorf("the server did not say the session stopped on the fault")
	}
	if n := strings.Count(fmt.Sprint(events), "session.ended"); n > 1 {
		t.Fatalf("%d session.ended", n)
	}
}
