package loop_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// it describes one iteration: a call "name(args)=output" (prefix ! for an
// error), or a text reply "text:…"; "fail" is a failed model call.
type it []string

func stateOf(t *testing.T, its ...it) *loop.State {
	t.Helper()
	var evs []loop.Event
	at := time.Unix(0, 0)
	add := func(p loop.Payload) { evs = append(evs, loop.NewEvent("s", int64(len(evs)+1), at, p)) }
	add(&loop.SessionStarted{Task: "x"})
	for n, x := range its {
		add(&loop.IterationStarted{N: n + 1})
		var calls []model.ToolCall
		var outs []string
		var errs []bool
		text := ""
		failed := false
		for i, c := range x {
			switch {
			case c == "fail":
				failed = true
			case len(c) > 5 && c[:5] == "text:":
				text = c[5:]
			default:
				isErr := c[0] == '!'
				if isErr {
					c = c[1:]
				}
				var name, args, out string
				fmt.Sscanf(c, "%s", &name)
				for j := range c {
					if c[j] == '(' {
						name = c[:j]
						rest := c[j+1:]
						for k := range rest {
							if rest[k] == ')' {
								args, out = rest[:k], rest[k+2:]
								break
							}
						}
						break
					}
				}
				calls = append(calls, model.ToolCall{ID: fmt.Sprintf("c%d_%d", n, i), Name: name, Arguments: []byte(args)})
				outs = append(outs, out)
				errs = append(errs, isErr)
			}
		}
		if failed {
			add(&loop.ModelFailed{Iteration: n + 1, Error: "boom"})
			add(&loop.IterationEnded{N: n + 1, Status: loop.IterationFailed})
			continue
		}
		add(&loop.ModelResponded{Iteration: n + 1, Text: text, ToolCalls: calls})
		for i, c := range calls {
			add(&loop.ToolStarted{Iteration: n + 1, CallID: c.ID, Name: c.Name, Input: c.Arguments})
			add(&loop.ToolFinished{Iteration: n + 1, CallID: c.ID, Name: c.Name, Output: outs[i], IsError: errs[i]})
		}
		add(&loop.IterationEnded{N: n + 1, Status: loop.IterationCompleted})
	}
	st, err := loop.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestDetectStuck(t *testing.T) {
	A, B, C := `read({"path":"a"})=x`, `read({"path":"b"})=y`, `read({"path":"c"})=z`
	tests := []struct {
		name    string
		its     []it
		pattern string
		reason  loop.StopReason
	}{
		{"nothing", []it{{A}, {B}, {C}}, "", ""},
		{"same call 3 times", []it{{B}, {A}, {A}, {A}}, loop.PatternSameCall, loop.ReasonRepetition},
		{"same call, whitespace differs", []it{{`read({"path":"a"})=x`}, {`read({ "path": "a" })=x`}, {`read({"path":"a"})=y`}}, loop.PatternSameCall, loop.ReasonRepetition},
		{"4 identical pairs", []it{{A}, {A}, {A}, {A}}, loop.PatternRepeatedPair, loop.ReasonStuck},
		{"3 identical errors", []it{{"!" + A}, {"!" + A}, {"!" + A}}, loop.PatternRepeatedError, loop.ReasonStuck},
		{"3 identical messages", []it{{"text:hmm"}, {"text:hmm"}, {"text:hmm"}}, loop.PatternRepeatedMessage, loop.ReasonStuck},
		{"2 identical messages", []it{{"text:hmm"}, {"text:hmm"}}, "", ""},
		{"alternation", []it{{A}, {B}, {A}, {B}, {A}, {B}}, loop.PatternAlternation, loop.ReasonStuck},
		{"alternation broken", []it{{A}, {B}, {A}, {C}, {A}, {B}}, "", ""},
		{"3 failed iterations", []it{{"fail"}, {"fail"}, {"!" + B}}, loop.PatternFailedIterations, loop.ReasonStuck},
		{"3 different errors", []it{{"!" + A}, {"!" + B}, {"!" + C}}, loop.PatternFailedIterations, loop.ReasonStuck},
		{"2 failed then success", []it{{"fail"}, {"fail"}, {A}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pattern, detail, reason, ok := stateOf(t, tt.its...).DetectStuck()
			if pattern != tt.pattern || reason != tt.reason || ok != (tt.pattern != "") {
				t.Fatalf("got %q %q %v (%s), want %q %q", pattern, reason, ok, detail, tt.pattern, tt.reason)
			}
		})
	}
}

func TestStuckNudgeThenEnd(t *testing.T) {
	e := newEnv()
	var steps []scripted.Step
	for range 4 {
		steps = append(steps, scripted.Call("read_file", `{"path":"fail.txt"}`))
	}
	steps = append(steps, scripted.Text("best effort"))
	m := scripted.Replies(steps...)
	r := e.runner(t, m, []tool.Tool{echoTool("read_file", nil)}, func(c *loop.Config) { c.Limits.OnStuck = "end" })
	st := run(t, r, "x")
	checkScript(t, m)
	// Nudge after call 3, end after call 4, then the wrap-up call.
	if got := lastUserContent(m.Requests()[3]); got == "x" || !strings.Contains(got, "repeating") {
		t.Fatalf("no nudge: %q", got)
	}
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonStuck || st.StuckDetections != 2 || st.Answer != "best effort" {
		t.Fatalf("%s %s %d %q", st.Status, st.Reason, st.StuckDetections, st.Answer)
	}
	_ = m
}
