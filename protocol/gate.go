package protocol

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// Gate runs a protocol inside a session whose workspace is Dir.
type Gate struct {
	P   *Protocol
	Dir string
}

var _ loop.Gate = (*Gate)(nil)

// current is the index of the step in progress, from the session's plan
// (the protocol keeps its progress in the plan, so it lives in the log).
func (g *Gate) current(st *loop.State) int {
	if st.Plan == nil {
		return -1
	}
	for i, s := range st.Plan.Steps {
		if s.Status == "in_progress" {
			return i
		}
	}
	return -1
}

// Start records the protocol as the plan and gives the first instruction.
func (g *Gate) Start(*loop.State) []loop.Payload {
	steps := make([]loop.PlanStep, len(g.P.Steps))
	for i, s := range g.P.Steps {
		steps[i] = loop.PlanStep{Title: s.Title, Status: "pending"}
	}
	steps[0].Status = "in_progress"
	return []loop.Payload{
		&loop.PlanUpdated{Goal: g.P.Title, Status: "active", Steps: steps, Reason: "protocol " + g.P.ID},
		g.instruction(0),
	}
}

func (g *Gate) instruction(i int) *loop.MessageAdded {
	s := g.P.Steps[i]
	text := fmt.Sprintf("Protocol %q, step %d of %d: %s\n\n%s", g.P.Title, i+1, len(g.P.Steps), s.Title, s.Instruction)
	switch s.RequiredOutput {
	case OutputFile:
		if s.File != "" {
			text += fmt.Sprintf("\n\nThis step must create the file %s. When it exists, say what you did without calling tools.", s.File)
		} else {
			text += "\n\nThis step must create a file. When it exists, say what you did without calling tools."
		}
	case OutputConfirmation:
		text += "\n\nWhen you are done, summarise the result without calling tools; a person will confirm it before the next step."
	default:
		text += "\n\nWhen you are done, give this step's result without calling tools."
	}
	return &loop.MessageAdded{Role: model.RoleUser, Content: text, Kind: loop.KindProtocol}
}

// Answer checks the current step's required output.
func (g *Gate) Answer(_ context.Context, st *loop.State, answer string) loop.GateDecision {
	i := g.current(st)
	if i < 0 {
		return loop.GateDecision{Accept: true}
	}
	s := g.P.Steps[i]
	switch s.RequiredOutput {
	case OutputFile:
		if missing := g.missingFile(st, s); missing != "" {
			return loop.GateDecision{Events: []loop.Payload{&loop.MessageAdded{Role: model.RoleUser, Kind: loop.KindProtocol,
				Content: fmt.Sprintf("Step %d (%s) is not finished: %s. Create it with the file tools, then answer again.", i+1, s.Title, missing)}}}
		}
	case OutputConfirmation:
		return loop.GateDecision{Events: []loop.Payload{&loop.SessionWaiting{Reason: loop.ReasonConfirmation,
			Question: fmt.Sprintf("Step %d of %d (%s) is done. Reply \"yes\" to go on, or say what to change.", i+1, len(g.P.Steps), s.Title)}}}
	}
	return g.finish(st, i, answer, false)
}

// Reply takes a person's confirmation, or their feedback on the step.
func (g *Gate) Reply(_ context.Context, st *loop.State, reply string) loop.GateDecision {
	i := g.current(st)
	if i < 0 {
		return loop.GateDecision{}
	}
	if confirms(reply) {
		return g.finish(st, i, st.LastAnswer(), true)
	}
	// Feedback: the user's message is already in the conversation; the
	// model redoes the step.
	return loop.GateDecision{}
}

func confirms(reply string) bool {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(reply), ".!")) {
	case "y", "yes", "ok", "okay", "confirm", "confirmed", "approve", "approved", "lgtm", "go on", "continue", "next":
		return true
	}
	return false
}

// finish records the step and moves to the next one, or accepts the answer
// after the last step.
func (g *Gate) finish(st *loop.State, i int, output string, confirmed bool) loop.GateDecision {
	s := g.P.Steps[i]
	steps := append([]loop.PlanStep(nil), st.Plan.Steps...)
	steps[i].Status, steps[i].Result = "completed", oneLine(output, 200)
	status := loop.PlanCompleted
	if i+1 < len(steps) {
		steps[i+1].Status = loop.StepInProgress
		status = loop.PlanActive
	}
	events := []loop.Payload{
		&loop.StepFinished{Protocol: g.P.ID, StepID: s.ID, Title: s.Title, Output: output, ToolCalls: g.toolsSince(st), Iteration: st.CurrentIteration, Confirmed: confirmed},
		&loop.PlanUpdated{Goal: st.Plan.Goal, Status: status, Steps: steps, Reason: "protocol step " + s.ID + " finished"},
	}
	if i+1 < len(g.P.Steps) {
		return loop.GateDecision{Events: append(events, g.instruction(i+1))}
	}
	return loop.GateDecision{Accept: true, Events: events}
}

// missingFile says what is missing for a file_creation step, or "".
func (g *Gate) missingFile(st *loop.State, s Step) string {
	if s.File != "" {
		p := filepath.Join(g.Dir, filepath.FromSlash(s.File))
		if rel, err := filepath.Rel(g.Dir, p); err != nil || strings.HasPrefix(rel, "..") {
			return "the protocol names a file outside the workspace (" + s.File + ")"
		}
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			return "the file " + s.File + " does not exist yet"
		}
		return ""
	}
	since := g.stepStart(st)
	for _, it := range st.Iterations {
		if it.N <= since {
			continue
		}
		for _, c := range it.ToolCalls {
			for _, m := range c.Modified {
				if m.Kind == tool.Created {
					return ""
				}
			}
		}
	}
	return "no file was created during this step"
}

// stepStart is the last iteration of the previous step.
func (g *Gate) stepStart(st *loop.State) int {
	if n := len(st.Steps); n > 0 {
		return st.Steps[n-1].Iteration
	}
	return 0
}

// toolsSince lists the tools called during the current step, in order.
func (g *Gate) toolsSince(st *loop.State) []string {
	since := g.stepStart(st)
	var names []string
	for _, it := range st.Iterations {
		if it.N <= since {
			continue
		}
		for _, c := range it.ToolCalls {
			names = append(names, c.Name)
		}
	}
	return names
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
