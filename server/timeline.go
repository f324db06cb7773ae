package server

import (
	"encoding/json"
	"strings"

	"github.com/agentloop/agentloop/loop"
)

// ToolCall is a line of a dashboard's tool-call timeline: sent on event
// streams after each tool.finished (type "tool_call"; not in the log, so
// it has no seq). Summaries are short: the log has everything.
type ToolCall struct {
	Type          string `json:"type"` // "tool_call"
	SessionID     string `json:"session_id"`
	ToolName      string `json:"tool_name"`
	ArgsSummary   string `json:"args_summary"`
	ResultSummary string `json:"result_summary"`
	Iteration     int    `json:"iteration_number"`
	IsError       bool   `json:"is_error,omitempty"`
}

// timeline derives tool-call lines from a session's events.
type timeline struct {
	args map[string]json.RawMessage // by call ID, from tool.started
}

// next returns the timeline line an event completes, if any.
func (tl *timeline) next(ev loop.Event) (ToolCall, bool) {
	switch d := ev.Data.(type) {
	case *loop.ToolStarted:
		if tl.args == nil {
			tl.args = map[string]json.RawMessage{}
		}
		tl.args[d.CallID] = d.Input
	case *loop.ToolFinished:
		args := tl.args[d.CallID]
		delete(tl.args, d.CallID)
		return ToolCall{Type: "tool_call", SessionID: ev.SessionID, ToolName: d.Name, ArgsSummary: summary(string(args), 200),
			ResultSummary: summary(d.Output, 200), Iteration: d.Iteration, IsError: d.IsError}, true
	}
	return ToolCall{}, false
}

// summary is s on one line, cut to n bytes at a rune boundary.
func summary(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
