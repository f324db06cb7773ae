package server

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
)

// roundTrip decodes what the server writes into the client's wire type,
// refusing fields the type lacks, and writes it again: the same bytes
// mean the two shapes have not drifted apart.
func roundTrip[T any](t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var w T
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("%s: api lacks a field the server writes: %v\n%s", name, err, b)
	}
	again, _ := json.Marshal(w)
	if !bytes.Equal(b, again) {
		t.Fatalf("%s: the wire type reads something else:\nserver %s\napi    %s", name, b, again)
	}
}

func TestWireTypesMatchWhatTheServerWrites(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)
	sum := loop.Summary{ID: "s", Tenant: "t", Task: "x", Model: "m", Status: loop.StatusFailed, Reason: "max_iterations", Iteration: 3,
		MaxIterations: 5, Tokens: 9, CostUSD: 0.5, CreatedAt: now, UpdatedAt: now, LastSeq: 7, Workspace: "/w", Labels: map[string]string{"a": "b"}}
	roundTrip[api.Summary](t, "summary", sum)
	if got := summaryOf(sum); !bytes.Equal(must(json.Marshal(got)), must(json.Marshal(sum))) {
		t.Fatalf("summaryOf drops a field: %+v", got)
	}
	ev := loop.Event{SessionID: "s", Seq: 2, Type: loop.TypeModelResponded, Version: 1, Time: now,
		Data: &loop.ModelResponded{Text: "hi", ToolCalls: []model.ToolCall{{ID: "c", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)}}}}
	roundTrip[api.Event](t, "event", ev)
	msgs := []model.Message{{Role: model.RoleAssistant, Content: "c", ToolCalls: []model.ToolCall{{ID: "1", Name: "n", Arguments: json.RawMessage(`{}`), Extra: json.RawMessage(`{"x":1}`)}},
		Reasoning: []model.ReasoningBlock{{Type: "thinking", Text: "t", Signature: "s"}}}, {Role: model.RoleTool, Content: "r", ToolCallID: "1", ToolName: "n", IsError: true}}
	roundTrip[[]api.Message](t, "messages", msgs)
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
