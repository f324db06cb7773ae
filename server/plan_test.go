package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type planView struct {
	Plan *struct {
		Status  string
		Current int `json:"current_step"`
		Steps   []struct {
			Status      string
			CompletedAt time.Time `json:"completed_at"`
		}
	}
}

func (a *api) plan(id string) planView {
	a.t.Helper()
	_, out, _ := a.do("GET", "/v1/sessions/"+id+"/plan", "", "")
	var p planView
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Plan == nil {
		a.t.Fatalf("plan: %v %s", err, out)
	}
	return p
}

// The plan's status follows the work: planning, executing, waiting for
// the user with the session, executing again after the answer, completed;
// each step says when it was completed, and the plan which step is current.
func TestPlanStatusesOverHTTP(t *testing.T) {
	a := newAPI(t, false)
	path := filepath.Join(a.dir, "plan.json")
	os.WriteFile(path, []byte(`{"steps":[
		{"tool_calls":[{"name":"update_plan","arguments":{"action":"create","goal":"Two notes","steps":["Write a","Write b"]}}]},
		{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":1,"status":"in_progress"}},{"name":"write_file","arguments":{"path":"a.txt","content":"a"}}]},
		{"tool_calls":[{"name":"update_plan","arguments":{"action":"wait_for_user","reason":"Which name for note a?"}}]},
		{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":1,"status":"completed"}},{"name":"write_file","arguments":{"path":"b.txt","content":"b"}}]},
		{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":2,"status":"completed"}}]},
		{"tool_calls":[{"name":"update_plan","arguments":{"action":"complete"}}]},
		{"text":"Both written."}]}`), 0o600)
	id := a.create("", fmt.Sprintf(`{"task":"notes","model":"script:%s"}`, path))
	a.waitStatus("", id, "waiting")
	if p := a.plan(id).Plan; p.Status != "waiting_for_user" || p.Current != 1 || p.Steps[0].Status != "in_progress" {
		t.Errorf("while the session waits: %+v", p)
	}
	_, out, _ := a.do("GET", "/v1/sessions/"+id+"/events?limit=1000", "", "")
	var page struct {
		Events []struct {
			Type string
			Data struct{ Status string }
		}
	}
	json.Unmarshal([]byte(out), &page)
	var recorded []string
	for _, e := range page.Events {
		if e.Type == "plan.updated" {
			recorded = append(recorded, e.Data.Status)
		}
	}
	if fmt.Sprint(recorded) != "[planning executing waiting_for_user]" {
		t.Errorf("plan.updated statuses %v", recorded)
	}
	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/reply", "", `{"text":"alpha"}`); code >= 300 {
		t.Fatalf("reply: %d %s", code, out)
	}
	a.waitStatus("", id, "completed")
	p := a.plan(id).Plan
	if p.Status != "completed" || p.Current != 0 {
		t.Errorf("at the end: %+v", p)
	}
	for i, s := range p.Steps {
		if s.Status != "completed" || s.CompletedAt.IsZero() {
			t.Errorf("step %d: %+v", i+1, s)
		}
	}
	if !p.Steps[0].CompletedAt.Before(p.Steps[1].CompletedAt) {
		t.Errorf("completed_at out of order: %v then %v", p.Steps[0].CompletedAt, p.Steps[1].CompletedAt)
	}
}
