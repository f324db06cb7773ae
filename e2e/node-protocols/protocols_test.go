// Package nodeprotocols_test drives a real `agentloop serve` with the npm
// clients of the protocols it speaks beside its own API: @ag-ui/client's
// HttpAgent (POST /v1/agui) and the ai package's DefaultChatTransport and
// readUIMessageStream (POST /v1/ui-stream). What the clients assembled is
// held against the sessions' logs, read here without them.
package nodeprotocols_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/nodetest"
)

func TestProtocolClientsAgainstTheServer(t *testing.T) {
	dir := nodetest.Project(t, "e2e/node-protocols")
	url := nodetest.Build(t).Serve(t)
	result := filepath.Join(t.TempDir(), "assembled.json")
	out := nodetest.Run(t, dir, "test/protocols.test.mjs", 2*time.Minute,
		"AGENTLOOP_URL="+url, "AGENTLOOP_SCRIPTS="+t.TempDir(), "AGENTLOOP_RESULT="+result)
	if !regexp.MustCompile(`(?m)^# pass 4$`).MatchString(out) || !regexp.MustCompile(`(?m)^# fail 0$`).MatchString(out) {
		t.Fatalf("want 4 passing Node tests:\n%s", out)
	}
	b, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		AGUI struct {
			Session  string
			Messages []struct {
				Role       string
				Content    string
				ToolCallID string `json:"toolCallId"`
				ToolCalls  []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"toolCalls"`
			}
			State map[string]any
		}
		UI struct {
			Session string
			Message struct {
				Role     string
				Metadata map[string]any
				Parts    []struct {
					Type, Text, ToolCallID, ToolName, State string
					Input                                   any
					Output                                  any
					Data                                    map[string]any
				}
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}

	// AG-UI: the agent's messages are the log's replies, calls and results.
	want := fromLog(t, url, got.AGUI.Session)
	var texts, calls []string
	results := map[string]string{}
	for _, m := range got.AGUI.Messages {
		switch m.Role {
		case "assistant":
			if m.Content != "" {
				texts = append(texts, m.Content)
			}
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID+" "+c.Function.Name+" "+canonical(t, c.Function.Arguments))
			}
		case "tool":
			results[m.ToolCallID] = m.Content
		}
	}
	check(t, "AG-UI assistant texts", texts, want.texts)
	check(t, "AG-UI tool calls", calls, want.calls)
	check(t, "AG-UI tool results", results, want.results)
	check(t, "AG-UI state", got.AGUI.State, map[string]any{"plan": want.plan})
	if len(want.texts) != 3 || len(want.calls) != 5 {
		t.Fatalf("the scripted session did not run as written: %+v", want)
	}

	// AI SDK: the message's parts are the log's replies, calls and outputs.
	want = fromLog(t, url, got.UI.Session)
	texts, calls = nil, nil
	results = map[string]string{}
	var plan map[string]any
	for _, p := range got.UI.Message.Parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "dynamic-tool":
			in, _ := json.Marshal(p.Input)
			calls = append(calls, p.ToolCallID+" "+p.ToolName+" "+string(in))
			if s, ok := p.Output.(string); ok && p.State == "output-available" {
				results[p.ToolCallID] = s
			}
		case "data-plan":
			plan = p.Data
		}
	}
	check(t, "AI SDK texts", texts, want.texts)
	check(t, "AI SDK tool calls", calls, want.calls)
	check(t, "AI SDK tool outputs", results, want.results)
	if plan["status"] != want.plan["status"] || len(plan["steps"].([]any)) != len(want.plan["steps"].([]any)) {
		t.Errorf("AI SDK plan %v, the log's %v", plan, want.plan)
	}
	meta := got.UI.Message.Metadata
	if meta["status"] != want.status || meta["answer"] != want.answer {
		t.Errorf("AI SDK finish metadata %v, the log ended %s with %q", meta, want.status, want.answer)
	}
}

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s\n got %v\nwant %v (the log)", what, got, want)
	}
}

// logView is what a client should hold of a session, read from its log.
type logView struct {
	texts, calls   []string
	results        map[string]string
	plan           map[string]any
	status, answer string
}

func fromLog(t *testing.T, url, id string) logView {
	t.Helper()
	resp, err := http.Get(url + "/v1/sessions/" + id + "/events?limit=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Events []struct {
			Type string
			Data json.RawMessage
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 {
		t.Fatalf("events of %q: %d %v", id, resp.StatusCode, err)
	}
	v := logView{results: map[string]string{}}
	for _, ev := range page.Events {
		var d struct {
			Text      string
			ToolCalls []struct {
				ID, Name  string
				Arguments json.RawMessage
			} `json:"tool_calls"`
			CallID       string `json:"call_id"`
			Output       string
			Goal, Status string
			Steps        []map[string]any
			Answer       string
		}
		json.Unmarshal(ev.Data, &d)
		switch ev.Type {
		case "model.responded":
			if d.Text != "" {
				v.texts = append(v.texts, d.Text)
			}
			for _, c := range d.ToolCalls {
				v.calls = append(v.calls, c.ID+" "+c.Name+" "+canonical(t, string(c.Arguments)))
			}
		case "tool.finished":
			v.results[d.CallID] = d.Output
		case "plan.updated":
			steps := make([]any, len(d.Steps))
			for i, s := range d.Steps {
				if s["status"] == nil || s["status"] == "" {
					s["status"] = "pending"
				}
				steps[i] = s
			}
			v.plan = map[string]any{"goal": d.Goal, "status": d.Status, "steps": steps}
		case "session.ended":
			v.status, v.answer = d.Status, d.Answer
		}
	}
	return v
}

func canonical(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %q", s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
