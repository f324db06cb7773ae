package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pendingApproval waits for the session's nth approval.requested and
// returns its call id and arguments hash.
func pendingApproval(t *testing.T, a *api, id string, n int) (callID, hash string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, out, _ := a.do("GET", "/v1/sessions/"+id+"/events?limit=1000", "", "")
		var page struct {
			Events []struct {
				Type string
				Data struct {
					CallID   string `json:"call_id"`
					ArgsHash string `json:"args_hash"`
				}
			}
		}
		json.Unmarshal([]byte(out), &page)
		seen := 0
		for _, ev := range page.Events {
			if ev.Type == "approval.requested" {
				if seen++; seen == n {
					return ev.Data.CallID, ev.Data.ArgsHash
				}
			}
		}
	}
	t.Fatalf("session %s: approval %d was never requested", id, n)
	return "", ""
}

func eventCount(a *api, id, typ string) int {
	_, out, _ := a.do("GET", "/v1/sessions/"+id+"/events?limit=1000", "", "")
	return strings.Count(out, `"type":"`+typ+`"`)
}

// Approving a call for the session lets the same call run unasked later;
// another call still asks, and a revoked allowance asks again.
func TestAllowForTheSession(t *testing.T) {
	a := newAPI(t, false)
	path := filepath.Join(a.dir, "repeat.json")
	write := func(name string) string {
		return fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":%q,"content":"x"}}]}`, name)
	}
	os.WriteFile(path, []byte(`{"steps":[`+strings.Join([]string{write("a.txt"), write("a.txt"), write("b.txt"), write("a.txt"), `{"text":"done"}`}, ",")+`]}`), 0o600)
	id := a.create("", fmt.Sprintf(`{"task":"write","model":"script:%s","approval":"ask"}`, path))

	call, hash := pendingApproval(t, a, id, 1)
	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/approvals/"+call, "", fmt.Sprintf(`{"approve":true,"args_hash":%q,"for_session":true}`, hash)); code != 200 {
		t.Fatalf("approve for the session: %d %s", code, out)
	}
	// The same call (step 2) runs unasked; b.txt (step 3) asks.
	call3, hash3 := pendingApproval(t, a, id, 2)
	if n := eventCount(a, id, "tool.finished"); n != 2 {
		t.Errorf("%d tool calls ran before b.txt asked, want 2 (a.txt twice)", n)
	}
	_, out, _ := a.do("GET", "/v1/sessions/"+id, "", "")
	if !strings.Contains(out, `"allowed":{"`+hash+`":{"name":"write_file"`) {
		t.Errorf("the state does not list the allowance: %.400s", out[strings.Index(out, `"status"`):])
	}
	// Revoked while the session waits: a.txt (step 4) asks again.
	if code, out, _ := a.do("DELETE", "/v1/sessions/"+id+"/allowances/"+hash+"?reason=enough", "", ""); code != 200 || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %d %s", code, out)
	}
	if code, out, _ := a.do("DELETE", "/v1/sessions/"+id+"/allowances/"+hash, "", ""); code != 409 || !strings.Contains(out, "allows no call") {
		t.Errorf("revoking twice: %d %s", code, out)
	}
	a.do("POST", "/v1/sessions/"+id+"/approvals/"+call3, "", fmt.Sprintf(`{"approve":true,"args_hash":%q}`, hash3))
	call4, hash4 := pendingApproval(t, a, id, 3)
	if hash4 != hash {
		t.Errorf("the third request is for %s, want a.txt's %s", hash4, hash)
	}
	a.do("POST", "/v1/sessions/"+id+"/approvals/"+call4, "", fmt.Sprintf(`{"approve":true,"args_hash":%q}`, hash4))
	a.waitStatus("", id, "completed")
	if n := eventCount(a, id, "approval.revoked"); n != 1 {
		t.Errorf("%d approval.revoked events, want 1", n)
	}
	if code, _, _ := a.do("DELETE", "/v1/sessions/"+id+"/allowances/"+hash, "", ""); code != 409 {
		t.Errorf("revoking on an ended session: %d", code)
	}
}
