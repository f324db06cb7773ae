package server_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// uiAssembled is the assistant message a UI message stream makes, applied
// as the ai package's readUIMessageStream does, with its order checked.
type uiAssembled struct {
	messageID string
	texts     []string
	calls     []string
	results   map[string]string
	errors    map[string]string
	plan      map[string]any
	approvals []string
	steps     int
	finish    map[string]any
	errorText string
	done      bool
}

func assembleUI(t *testing.T, frames []string) uiAssembled {
	t.Helper()
	as := uiAssembled{results: map[string]string{}, errors: map[string]string{}}
	text := map[string]*strings.Builder{}
	var order []string
	inStep, stepStart := false, 0
	inputs := map[string]string{}
	for i, f := range frames {
		if f == "[DONE]" {
			if i != len(frames)-1 || as.finish == nil {
				t.Fatalf("[DONE] at frame %d of %d, finish %v", i, len(frames), as.finish)
			}
			as.done = true
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(f), &c); err != nil {
			t.Fatalf("frame %d is not JSON: %s", i, f)
		}
		str := func(k string) string { s, _ := c[k].(string); return s }
		typ := str("type")
		if i == 0 && typ != "start" {
			t.Fatalf("the first chunk is %s, not start", f)
		}
		if as.finish != nil {
			t.Fatalf("%s after finish", f)
		}
		switch typ {
		case "start":
			as.messageID = str("messageId")
		case "start-step":
			if inStep {
				t.Fatal("start-step inside a step")
			}
			inStep = true
			as.steps++
			stepStart = len(order)
		case "finish-step":
			if !inStep {
				t.Fatal("finish-step outside a step")
			}
			inStep = false
		case "reset-step":
			// As the ai package does: the step's parts so far are dropped
			// (a correction of lost or misplaced deltas).
			if !inStep {
				t.Fatal("reset-step outside a step")
			}
			order = order[:stepStart]
		case "text-start":
			text[str("id")] = &strings.Builder{}
			order = append(order, str("id"))
		case "text-delta":
			b := text[str("id")]
			if b == nil {
				t.Fatalf("text-delta of part %s, never started", str("id"))
			}
			b.WriteString(str("delta"))
		case "text-end":
		case "tool-input-start":
			if c["dynamic"] != true {
				t.Errorf("tool %s is not dynamic", str("toolName"))
			}
			inputs[str("toolCallId")] = ""
		case "tool-input-delta":
			inputs[str("toolCallId")] += str("inputTextDelta")
		case "tool-input-available":
			b, _ := json.Marshal(c["input"])
			if compact(t, inputs[str("toolCallId")]) != string(b) {
				t.Errorf("input deltas %s differ from the input %s", inputs[str("toolCallId")], b)
			}
			as.calls = append(as.calls, str("toolCallId")+" "+str("toolName")+" "+string(b))
		case "tool-output-available":
			as.results[str("toolCallId")] = str("output")
		case "tool-output-error":
			as.errors[str("toolCallId")] = str("errorText")
		case "tool-approval-request":
			as.approvals = append(as.approvals, str("approvalId"))
		case "data-plan":
			as.plan = c["data"].(map[string]any)
		case "error":
			as.errorText = str("errorText")
		case "finish":
			if inStep {
				t.Fatal("finish inside a step")
			}
			as.finish = c
		default:
			t.Fatalf("unexpected chunk %s", f)
		}
	}
	for _, id := range order {
		if s := text[id].String(); s != "" {
			as.texts = append(as.texts, s)
		}
	}
	return as
}

func TestUIStreamChatMatchesTheLog(t *testing.T) {
	a, _ := protocolAPI(t, "auto")
	body := `{"id":"chat-1","trigger":"submit-message","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"look around"}]}]}`
	code, hdr, frames := sseData(t, a, "POST", "/v1/ui-stream", body)
	if code != 200 || hdr.Get("x-vercel-ai-ui-message-stream") != "v1" || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("POST /v1/ui-stream: %d %v", code, hdr)
	}
	got := assembleUI(t, frames)
	if !got.done || got.finish == nil {
		t.Fatalf("the stream did not finish: %v", frames)
	}
	meta := got.finish["messageMetadata"].(map[string]any)
	id := meta["session_id"].(string)
	if got.finish["finishReason"] != "stop" || meta["status"] != "completed" || meta["answer"] != "The workspace is empty; nothing to report. ✓" {
		t.Errorf("finish %v", got.finish)
	}
	want := wantFromLog(t, logOf(t, a, id))
	if !reflect.DeepEqual(got.texts, want.texts) {
		t.Errorf("texts\n got %q\nwant %q", got.texts, want.texts)
	}
	if !reflect.DeepEqual(got.calls, want.calls) || !reflect.DeepEqual(got.results, want.results) || len(got.errors) > 0 {
		t.Errorf("tool calls %q results %q errors %q\nwant %q %q", got.calls, got.results, got.errors, want.calls, want.results)
	}
	if got.steps != 4 || got.plan["status"] != "completed" || len(got.plan["steps"].([]any)) != 2 {
		t.Errorf("%d steps, plan %v", got.steps, got.plan)
	}

	// The chat's id finds its session; following it replays the same.
	_, _, frames = sseData(t, a, "GET", "/v1/sessions/"+id+"/ui-stream", "")
	follow := assembleUI(t, frames)
	if !reflect.DeepEqual(follow.texts, want.texts) || !reflect.DeepEqual(follow.calls, want.calls) || !follow.done {
		t.Errorf("following differs: %+v", follow)
	}
	// Nothing is under way: reconnecting finds no stream.
	if code, out, _ := a.do("GET", "/v1/ui-stream/chat-1/stream", "", ""); code != http.StatusNoContent {
		t.Errorf("reconnect to a finished chat: %d %s", code, out)
	}
	// The chat goes on after its session ended: a new session, with the
	// same model, starts from the whole conversation (the answered tool
	// calls included) and is the chat's from now on.
	first := map[string]any{"id": "m1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "look around"}}}
	var parts []any
	for _, c := range want.calls {
		f := strings.SplitN(c, " ", 3)
		var in any
		json.Unmarshal([]byte(f[2]), &in)
		parts = append(parts, map[string]any{"type": "dynamic-tool", "toolCallId": f[0], "toolName": f[1], "state": "output-available", "input": in, "output": want.results[f[0]]})
	}
	parts = append(parts, map[string]any{"type": "text", "text": want.texts[len(want.texts)-1]})
	answer := map[string]any{"id": got.messageID, "role": "assistant", "parts": parts}
	more := map[string]any{"id": "m2", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "and now?"}}}
	b, _ := json.Marshal(map[string]any{"id": "chat-1", "messages": []any{first, answer, more}})
	_, _, frames = sseData(t, a, "POST", "/v1/ui-stream", string(b))
	next := assembleUI(t, frames)
	nextID, _ := next.finish["messageMetadata"].(map[string]any)["session_id"].(string)
	if nextID == "" || nextID == id || !reflect.DeepEqual(next.texts, want.texts) {
		t.Fatalf("the chat did not go on in a new session of the same model: %+v", next)
	}
	var started struct {
		Messages []struct {
			Role, Content string
			ToolCalls     []struct{ ID string } `json:"tool_calls"`
			ToolCallID    string                `json:"tool_call_id"`
		}
	}
	json.Unmarshal(logOf(t, a, nextID)[0].Data, &started)
	var roles []string
	for _, m := range started.Messages {
		roles = append(roles, m.Role)
	}
	if want := []string{"user", "assistant", "tool", "tool", "tool", "tool", "tool", "user"}; !reflect.DeepEqual(roles, want) || started.Messages[7].Content != "and now?" || len(started.Messages[1].ToolCalls) != 5 {
		t.Errorf("the new session starts from %+v, want roles %v", started.Messages, want)
	}
	code, out, _ := a.do("GET", "/v1/sessions?label=ui_chat=chat-1", "", "")
	if code != 200 || !strings.Contains(out, nextID) {
		t.Errorf("the new session is not labelled with the chat: %s", out)
	}
}

func TestUIStreamWaitsForAnswersAndApprovals(t *testing.T) {
	a, dir := protocolAPI(t, "ask")
	script := writeScript(t, dir, `{"steps": [
	 {"text": "One question.", "tool_calls": [{"name": "ask_user", "arguments": {"question": "Which file?"}}]},
	 {"tool_calls": [{"id": "w1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "hi"}}]},
	 {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "missing.txt"}}]},
	 {"text": "Wrote notes.txt."}
	]}`)
	user := func(id, text string) string {
		return `{"id":"` + id + `","role":"user","parts":[{"type":"text","text":"` + text + `"}]}`
	}
	code, _, frames := sseData(t, a, "POST", "/v1/ui-stream", `{"id":"c2","model":"script:`+script+`","messages":[`+user("m1", "write notes")+`]}`)
	if code != 200 {
		t.Fatalf("first message: %d", code)
	}
	turn1 := assembleUI(t, frames)
	meta := turn1.finish["messageMetadata"].(map[string]any)
	if meta["status"] != "waiting" || meta["detail"] != "Which file?" || !reflect.DeepEqual(turn1.texts, []string{"One question."}) {
		t.Fatalf("turn 1: %+v", turn1)
	}
	_, _, frames = sseData(t, a, "POST", "/v1/ui-stream", `{"id":"c2","messages":[`+user("m1", "write notes")+`,`+user("m2", "notes.txt")+`]}`)
	turn2 := assembleUI(t, frames)
	if turn2.finish["finishReason"] != "tool-calls" || !reflect.DeepEqual(turn2.approvals, []string{"w1"}) {
		t.Fatalf("turn 2 did not ask to approve w1: %+v", turn2)
	}
	// useChat sends the assistant message back with the person's answer.
	approved := `{"id":"a2","role":"assistant","parts":[{"type":"dynamic-tool","toolName":"write_file","toolCallId":"w1","state":"approval-responded","input":{"path":"notes.txt","content":"hi"},"approval":{"id":"w1","approved":true}}]}`
	_, _, frames = sseData(t, a, "POST", "/v1/ui-stream", `{"id":"c2","trigger":"submit-message","messages":[`+user("m1", "write notes")+`,`+approved+`]}`)
	turn3 := assembleUI(t, frames)
	if turn3.finish["messageMetadata"].(map[string]any)["status"] != "completed" || !reflect.DeepEqual(turn3.texts, []string{"Wrote notes.txt."}) {
		t.Fatalf("turn 3: %+v", turn3)
	}
	if _, ok := turn3.results["w1"]; !ok {
		t.Errorf("the approved call's output is missing: %v", turn3.results)
	}
	if e := turn3.errors["r1"]; e == "" {
		t.Errorf("the failed read is not a tool-output-error: %v / %v", turn3.results, turn3.errors)
	}
}

func TestUIStreamRefusesWhatItCannotRun(t *testing.T) {
	a, _ := protocolAPI(t, "auto")
	for _, c := range []struct {
		body, want string
		code       int
	}{
		{`{"messages":[]}`, `chat \"id\"`, 400},
		{`{"id":"c","messages":[]}`, "no messages", 400},
		{`{"id":"c","messages":[{"id":"m","role":"user","parts":[{"type":"file","url":"data:,x","mediaType":"text/plain"}]}]}`, "file parts", 400},
		{`{"id":"c","trigger":"regenerate-message","messages":[]}`, "not regenerated", 409},
		{`{"id":"c","model":"nope/nope","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"x"}]}]}`, "model", 400},
	} {
		code, out, _ := a.do("POST", "/v1/ui-stream", "", c.body)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%s: %d %s, want %d naming %q", c.body, code, out, c.code, c.want)
		}
	}
	if code, _, _ := a.do("GET", "/v1/ui-stream/nope/stream", "", ""); code != 404 {
		t.Errorf("reconnect to an unknown chat: %d", code)
	}
}
