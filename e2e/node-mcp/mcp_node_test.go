// Package nodemcp_test drives a real `agentloop serve`'s /mcp with the
// official MCP TypeScript SDK's client (client.mjs, run under Node.js).
package nodemcp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/nodetest"
)

// An MCP client from npm starts a session with a scripted model, waits for
// it and reads its answer and log; what it saw is what the server recorded.
func TestTypeScriptMCPClient(t *testing.T) {
	dir := nodetest.Project(t, "e2e/node-mcp")
	al := nodetest.Build(t)
	key := al.Key(t, "acme", "operator")
	url := al.Serve(t, "--auth", "keys")
	tmp := al.Dir
	script := filepath.Join(tmp, "hello.json")
	os.WriteFile(script, []byte(`{"steps":[{"text":"Hello, TypeScript."}]}`), 0o600)

	out := nodetest.Run(t, dir, "client.mjs", 2*time.Minute, "AGENTLOOP_URL="+url, "AGENTLOOP_KEY="+key, "AGENTLOOP_SCRIPT="+script)
	var saw struct {
		Refused string   `json:"refused"`
		Tools   []string `json:"tools"`
		ID      string   `json:"id"`
		Started string   `json:"started"`
		Waited  struct {
			Status   string `json:"status"`
			Answer   string `json:"answer"`
			TimedOut bool   `json:"timed_out"`
		} `json:"waited"`
		Answer   string `json:"answer"`
		BadStart struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"bad_start"`
		Events [][2]any `json:"events"`
		Listed []string `json:"listed"`
	}
	if err := json.Unmarshal([]byte(out), &saw); err != nil {
		t.Fatalf("client.mjs printed %q: %v", out, err)
	}
	if !strings.Contains(saw.Refused, "401") && !strings.Contains(saw.Refused, "API key") {
		t.Errorf("without a key: %q", saw.Refused)
	}
	for _, name := range []string{"start_session", "get_session", "wait_session", "list_sessions", "reply_session", "pause_session", "resume_session", "terminate_session", "decide_approval"} {
		if !slices.Contains(saw.Tools, name) {
			t.Errorf("tools %v lack %s", saw.Tools, name)
		}
	}
	if saw.Waited.Status != "completed" || saw.Waited.Answer != "Hello, TypeScript." || saw.Waited.TimedOut || saw.Answer != "Hello, TypeScript." {
		t.Errorf("the client saw %+v, answer %q", saw.Waited, saw.Answer)
	}
	if !saw.BadStart.IsError || !strings.Contains(saw.BadStart.Text, `approval "auto" refused`) {
		t.Errorf("approval auto: %+v", saw.BadStart)
	}
	if !slices.Contains(saw.Listed, saw.ID) {
		t.Errorf("list_sessions %v lacks %s", saw.Listed, saw.ID)
	}

	// The log the client read is the server's log.
	req, _ := http.NewRequest("GET", url+"/v1/sessions/"+saw.ID+"/events?limit=1000", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var page struct {
		Events []struct {
			Seq  float64 `json:"seq"`
			Type string  `json:"type"`
		} `json:"events"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("events page: %v %s", err, body)
	}
	var want [][2]any
	for _, e := range page.Events {
		want = append(want, [2]any{e.Seq, e.Type})
	}
	gotJSON, _ := json.Marshal(saw.Events)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) || len(want) == 0 || want[len(want)-1][1] != "session.ended" {
		t.Errorf("the log the client read:\n%s\nthe server's:\n%s", gotJSON, wantJSON)
	}
}
