package loop

import (
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// ModeSingleShot is one model call whose reply is the answer: no
// iterations to continue, no wrap-up call, tools only when the caller
// offers them.
const ModeSingleShot Mode = "single_shot"

// GoalMarker ends a session in any mode, like the completion marker: the
// text after it is the answer.
const GoalMarker = "GOAL_COMPLETE"

// finalAnswer returns the answer a reply gives with a completion marker
// (the session's marker, or GOAL_COMPLETE) in it: the text after the last
// marker, or, when nothing follows it, the text before.
func finalAnswer(text, marker string) (string, bool) {
	for _, m := range []string{marker, GoalMarker} {
		if m == "" {
			continue
		}
		i := strings.LastIndex(text, m)
		if i < 0 {
			continue
		}
		after := strings.TrimSpace(strings.TrimLeft(text[i+len(m):], ": \t"))
		if after == "" {
			after = strings.TrimSpace(text[:i])
		}
		return after, true
	}
	return "", false
}

// checkMessages validates a caller's conversation to start a session
// from: known roles, tool results that answer an earlier call, and a last
// message the model can reply to (from the user or a tool).
func checkMessages(msgs []model.Message) error {
	calls := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case model.RoleSystem, model.RoleUser:
		case model.RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return fmt.Errorf("loop: message %d: an assistant tool call needs an id and a name", i+1)
				}
				calls[c.ID] = true
			}
		case model.RoleTool:
			if !calls[m.ToolCallID] {
				return fmt.Errorf("loop: message %d: tool result for call %q, which no earlier assistant message made", i+1, m.ToolCallID)
			}
		default:
			return fmt.Errorf("loop: message %d: unknown role %q (use system, user, assistant or tool)", i+1, m.Role)
		}
	}
	if len(msgs) == 0 {
		return fmt.Errorf("loop: the messages are empty")
	}
	if last := msgs[len(msgs)-1].Role; last != model.RoleUser && last != model.RoleTool {
		return fmt.Errorf("loop: the last message is from the %s; a session starts from a user message or a tool result", last)
	}
	return nil
}

// lastUserText is what a conversation asks, for display: its last user
// message.
func lastUserText(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

// seededConversation is the conversation a session starts with: the
// system prompt, unless the caller's messages bring their own system
// message (which then replaces it), then the caller's messages.
func seededConversation(systemPrompt string, msgs []model.Message) []model.Message {
	out := make([]model.Message, 0, len(msgs)+1)
	hasSystem := false
	for _, m := range msgs {
		hasSystem = hasSystem || m.Role == model.RoleSystem
	}
	if systemPrompt != "" && !hasSystem {
		out = append(out, model.Message{Role: model.RoleSystem, Content: systemPrompt})
	}
	return append(out, msgs...)
}
