package loop

import "github.com/agentloop/agentloop/model"

// Dialogue is what the model sees on its next call: the conversation,
// condensed when it outgrew the context window.
type Dialogue struct {
	Conversation []model.Message `json:"-"`
	// Condensations says where and how the conversation was condensed.
	Condensations []Condensation `json:"condensations,omitempty"`
	// past are the conversations before each condensation, in order,
	// kept whole: a rewind to a step before a condensation goes back to
	// one of them.
	past [][]model.Message
}

func (c *Dialogue) apply(e Event) {
	switch d := e.Data.(type) {
	case *SessionStarted:
		if len(d.Messages) > 0 {
			c.Conversation = withAnswerInstructions(seededConversation(d.SystemPrompt, d.Messages), d.AnswerSchema)
			return
		}
		if d.SystemPrompt != "" {
			c.Conversation = append(c.Conversation, model.Message{Role: model.RoleSystem, Content: d.SystemPrompt})
		}
		c.Conversation = withAnswerInstructions(append(c.Conversation, model.Message{Role: model.RoleUser, Content: d.Task}), d.AnswerSchema)
	case *ModelResponded:
		c.Conversation = appendSteady(c.Conversation, model.Message{
			Role: model.RoleAssistant, Content: d.Text, ToolCalls: d.ToolCalls, Reasoning: d.Reasoning,
		}, 8)
	case *ToolFinished:
		c.Conversation = appendSteady(c.Conversation, model.Message{
			Role: model.RoleTool, Content: d.Output, ToolCallID: d.CallID, ToolName: d.Name, IsError: d.IsError, Images: d.Images,
		}, 8)
	case *MessageAdded:
		c.Conversation = appendSteady(c.Conversation, model.Message{Role: d.Role, Content: d.Content}, 8)
	case *ConversationCondensed:
		c.past = append(c.past, c.Conversation)
		c.Conversation = condensed(c.Conversation, d)
		c.Condensations = append(c.Condensations, condensationOf(d))
	}
}
