package fake

import (
	"encoding/json"
	"strconv"

	"github.com/agentloop/agentloop/bench/compare/chatwire"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

// conversation is the request a correct loop sends after n tool results.
func conversation(n int) []byte {
	req := chatwire.Request{Model: workload.ModelName, Tools: []chatwire.Tool{{Type: "function", Function: chatwire.Function{
		Name: workload.ToolName, Description: workload.ToolDescription, Parameters: json.RawMessage(workload.ToolSchema)}}},
		Messages: []chatwire.Message{{Role: "system", Content: chatwire.Str(workload.SystemPrompt)}, {Role: "user", Content: chatwire.Str(workload.Prompt)}}}
	for i := range n {
		a, b := workload.Args(i)
		req.Messages = append(req.Messages, chatwire.Message{Role: "assistant", ToolCalls: []chatwire.ToolCall{{ID: workload.CallID(i), Type: "function",
			Function: chatwire.FunctionCall{Name: workload.ToolName, Arguments: `{"a":` + strconv.Itoa(a) + `,"b":` + strconv.Itoa(b) + `}`}}}},
			chatwire.Message{Role: "tool", ToolCallID: workload.CallID(i), Content: chatwire.Str(strconv.Itoa(workload.Sum(i)))})
	}
	body, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return body
}

func itoa(n int) string { return strconv.Itoa(n) }
