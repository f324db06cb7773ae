// Package session has the tools through which a model talks to the person
// behind a session and ends it: ask_user stops the session until the user
// answers, final_answer ends it with an answer. Tools returns them together
// with update_plan and the memory tools: every tool that works on the
// session itself rather than on the workspace.
package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/memory"
	"github.com/agentloop/agentloop/tool/plan"
)

// Tools returns every session tool: update_plan, remember, recall, forget,
// list_memory, ask_user and final_answer.
func Tools() []tool.Tool {
	out := []tool.Tool{plan.New()}
	out = append(out, memory.Tools()...)
	return append(out, AskUser(), FinalAnswer())
}

// AskUser returns ask_user: the session waits (status waiting, reason
// question) until a person replies; the reply is the model's next user
// message.
func AskUser() loop.SessionTool {
	return loop.SessionFunc(model.ToolSpec{
		Name: "ask_user",
		Description: "Ask the user a question and wait for the answer. Use it when you cannot go on without information or a decision only the user has; " +
			"do not use it to report progress. The session stops until the user replies; their answer comes back as the next user message. " +
			"Other tool calls in the same reply do not run.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {"question": {"type": "string", "description": "The question, complete enough to answer without reading the rest of the conversation."}},
  "required": ["question"],
  "additionalProperties": false
}`),
	}, askUser)
}

// FinalAnswer returns final_answer: the session ends, completed, with the
// answer. Tool calls after it in the same reply do not run.
func FinalAnswer() loop.SessionTool {
	return loop.SessionFunc(model.ToolSpec{
		Name: "final_answer",
		Description: "Finish the task and end the session with your final answer for the user: what you did, what you found, and anything left open. " +
			"If you could not do the task, say so with success false and explain what stopped you: a person will look at it. " +
			"Call it once, last; tool calls after it in the same reply do not run.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "answer": {"type": "string", "description": "The final answer, written for the user."},
    "success": {"type": "boolean", "description": "false when the task could not be done (default true)."}
  },
  "required": ["answer"],
  "additionalProperties": false
}`),
	}, finalAnswer)
}

func askUser(_ *loop.State, raw json.RawMessage) (tool.Result, []loop.Payload, error) {
	var a struct {
		Question string `json:"question"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Result{}, nil, fmt.Errorf("ask_user: arguments do not match the schema (%v); send {\"question\": \"…\"}", err)
	}
	q := strings.TrimSpace(a.Question)
	if q == "" {
		return tool.Result{}, nil, errors.New("ask_user: question is empty; write the question for the user")
	}
	return tool.Result{Output: "Your question was sent to the user. The session waits; their answer will follow as the next user message."},
		[]loop.Payload{&loop.SessionWaiting{Reason: loop.ReasonQuestion, Question: q}}, nil
}

func finalAnswer(st *loop.State, raw json.RawMessage) (tool.Result, []loop.Payload, error) {
	var a struct {
		Answer  string `json:"answer"`
		Success *bool  `json:"success"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Result{}, nil, fmt.Errorf("final_answer: arguments do not match the schema (%v); send {\"answer\": \"…\"}", err)
	}
	answer := strings.TrimSpace(a.Answer)
	if answer == "" {
		return tool.Result{}, nil, errors.New("final_answer: answer is empty; write the answer for the user")
	}
	var effects []loop.Payload
	if st != nil && st.Plan != nil && st.Plan.Status.Open() {
		if open := unfinished(st.Plan); len(open) > 0 {
			effects = append(effects, &loop.Warning{
				Code:    "final_answer_with_open_plan",
				Message: fmt.Sprintf("the model gave its final answer while plan steps %s were not finished", strings.Join(open, ", ")),
			})
		}
	}
	if a.Success != nil && !*a.Success {
		effects = append(effects, &loop.Finish{Answer: answer, Failed: true})
		return tool.Result{Output: "Recorded that the task could not be done; the session waits for a person."}, effects, nil
	}
	effects = append(effects, &loop.Finish{Answer: answer})
	return tool.Result{Output: "Final answer recorded; the session ends."}, effects, nil
}

func unfinished(p *loop.Plan) []string {
	var out []string
	for i, s := range p.Steps {
		switch s.Status {
		case plan.StepCompleted, plan.StepSkipped, plan.StepFailed:
		default:
			out = append(out, fmt.Sprint(i+1))
		}
	}
	return out
}
