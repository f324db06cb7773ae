package server_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session whose checks partly pass leaves a follow-up: started over
// HTTP, it works in the same workspace on what is left, and each session
// finds the other.
func TestFollowUpFinishesWhatIsLeft(t *testing.T) {
	a := newAPI(t, false)
	first := filepath.Join(a.dir, "first.json")
	os.WriteFile(first, []byte(`{"steps":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"a"}}]},
		{"text":"Wrote a.txt; done."}]}`), 0o600)
	id := a.create("", fmt.Sprintf(`{"task":"write a.txt and b.txt","model":"script:%s","max_iterations":2,"verify":["test -f a.txt","test -f b.txt"]}`, first))
	a.waitStatus("", id, "failed")
	if code, out, _ := a.do("GET", "/v1/sessions/"+id+"/verification", "", ""); code != 200 || !strings.Contains(out, `"outcome":"partial_pass"`) {
		t.Fatalf("verification: %d %s", code, out)
	}

	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/follow-up", "", `{"workspace":"elsewhere"}`); code != 400 || !strings.Contains(out, "workspace") {
		t.Errorf("a follow-up elsewhere: %d %s", code, out)
	}
	second := filepath.Join(a.dir, "second.json")
	os.WriteFile(second, []byte(`{"steps":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"b"}}]},
		{"text":"Wrote b.txt."}]}`), 0o600)
	code, out, hdr := a.do("POST", "/v1/sessions/"+id+"/follow-up", "", fmt.Sprintf(`{"model":"script:%s"}`, second))
	if code != 201 {
		t.Fatalf("follow-up: %d %s", code, out)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(out), &created)
	if hdr.Get("Location") != "/v1/sessions/"+created.ID {
		t.Errorf("Location %q", hdr.Get("Location"))
	}
	a.waitStatus("", created.ID, "completed")
	_, out, _ = a.do("GET", "/v1/sessions/"+created.ID, "", "")
	var st struct {
		Task, Workspace string
		Labels          map[string]string
		Verify          []string
		Verification    struct{ Outcome string }
	}
	json.Unmarshal([]byte(out), &st)
	_, orig, _ := a.do("GET", "/v1/sessions/"+id, "", "")
	var was struct{ Workspace string }
	json.Unmarshal([]byte(orig), &was)
	if st.Task != "Make these checks pass: test -f b.txt" || st.Workspace != was.Workspace || st.Labels["follow_up_of"] != id ||
		len(st.Verify) != 2 || st.Verification.Outcome != "pass" {
		t.Errorf("the follow-up: task %q, workspace %q (first: %q), labels %v, verify %v, outcome %q", st.Task, st.Workspace, was.Workspace, st.Labels, st.Verify, st.Verification.Outcome)
	}
	_, list, _ := a.do("GET", "/v1/sessions?label="+url.QueryEscape("follow_up_of="+id), "", "")
	if !strings.Contains(list, created.ID) || strings.Count(list, `"id"`) != 1 {
		t.Errorf("the first session's follow-ups: %s", list)
	}

	// A session that passed leaves nothing to follow up, unless told what.
	if code, out, _ := a.do("POST", "/v1/sessions/"+created.ID+"/follow-up", "", ""); code != 409 || !strings.Contains(out, "nothing to follow up") {
		t.Errorf("follow-up of a passed session: %d %s", code, out)
	}
	if code, out, _ := a.do("POST", "/v1/sessions/nope/follow-up", "", ""); code != 404 {
		t.Errorf("follow-up of no session: %d %s", code, out)
	}
}
