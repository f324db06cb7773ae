package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A session started over HTTP gets its profile's limits (here a built-in
// one), under the request's own; an unknown profile is refused.
func TestStartWithAProfilesLimits(t *testing.T) {
	a := newAPI(t, false)
	id := a.create("", `{"task":"say hi","profile":"strict"}`)
	a.waitStatus("", id, "completed")
	_, out, _ := a.do("GET", "/v1/sessions/"+id, "", "")
	var st struct {
		Profile string
		Limits  struct {
			MaxIterations int    `json:"max_iterations"`
			BudgetTokens  int    `json:"budget_tokens"`
			StuckRepeats  int    `json:"stuck_repeats"`
			Timeout       string `json:"timeout"` // seconds, e.g. "600s"
		}
	}
	json.Unmarshal([]byte(out), &st)
	if st.Profile != "strict" || st.Limits.MaxIterations != 10 || st.Limits.BudgetTokens != 50000 || st.Limits.StuckRepeats != 3 || st.Limits.Timeout != "600s" {
		t.Errorf("strict over HTTP: profile %q, limits %+v", st.Profile, st.Limits)
	}
	id = a.create("", `{"task":"say hi","profile":"strict","max_iterations":4}`)
	a.waitStatus("", id, "completed")
	_, out, _ = a.do("GET", "/v1/sessions/"+id, "", "")
	json.Unmarshal([]byte(out), &st)
	if st.Limits.MaxIterations != 4 || st.Limits.BudgetTokens != 50000 {
		t.Errorf("the request's own limit under strict: %+v", st.Limits)
	}
	if code, out, _ := a.do("POST", "/v1/sessions", "", `{"task":"x","profile":"strcit"}`); code != 400 || !strings.Contains(out, `did you mean \"strict\"`) {
		t.Errorf("an unknown profile: %d %s", code, out)
	}
}
