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

// it describes one iteration: a call "name(args)=output" (prefix ! for a
// result that reports an error, # for a call that could not run), a text
// reply "text:…" ("text:" alone is an empty reply), "fail" for a failed
// model call, or "user:…" for a person's message after the iteration.
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
		var errs, broke []bool
		text, user := "", ""
		failed := false
		for i, c := range x {
			switch {
			case c == "fail":
				failed = true
			case strings.HasPrefix(c, "text:"):
				text = c[5:]
			case strings.HasPrefix(c, "user:"):
				user = c[5:]
			default:
				isErr, couldNotRun := c[0] == '!', c[0] == '#'
				if isErr || couldNotRun {
					c = c[1:]
				}
				broke = append(broke, couldNotRun)
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
			add(&loop.ToolFinished{Iteration: n + 1, CallID: c.ID, Name: c.Name, Output: outs[i], IsError: errs[i] || broke[i], Failed: broke[i]})
		}
		add(&loop.IterationEnded{N: n + 1, Status: loop.IterationCompleted})
		if user != "" {
			add(&loop.MessageAdded{Role: model.RoleUser, Content: user, Kind: loop.KindUser})
		}
	}
	st, err := loop.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestDetectStuck(t *testing.T) {
	A, B, C := `read({"path":"a"})=x`, `read({"path":"b"})=y`, `read({"path":"c"})=z`
	poll := func(out string) string { return `run({"command":"make status"})=` + out }
	test := func(out string) string { return `run({"command":"go test ./..."})=` + out }
	tests := []struct {
		name    string
		its     []it
		pattern string
		reason  loop.StopReason
	}{
		{"nothing", []it{{A}, {B}, {C}}, "", ""},
		{"same call 3 times, same result", []it{{B}, {A}, {A}, {A}}, "", ""},
		{"same call and result 4 times", []it{{A}, {A}, {A}, {A}}, loop.PatternRepeatedPair, loop.ReasonStuck},
		{"4 times, whitespace in the arguments differs", []it{{`read({"path":"a"})=x`}, {`read({ "path": "a" })=x`}, {`read({"path":"a"})=x`}, {`read({"path" : "a"})=x`}}, loop.PatternRepeatedPair, loop.ReasonStuck},
		{"polling until the output changes", []it{{poll("building")}, {poll("building")}, {poll("building")}, {poll("done")}}, "", ""},
		{"a flaky test that then passes", []it{{"!" + test("FAIL")}, {"!" + test("FAIL")}, {test("ok")}}, "", ""},
		{"fixing a syntax error line by line", []it{{"!" + test("line 3: syntax error")}, {"!" + test("line 7: syntax error")}, {"!" + test("line 9: syntax error")}}, "", ""},
		{"same call, same error 3 times", []it{{"!" + A}, {"!" + A}, {"!" + A}}, loop.PatternRepeatedError, loop.ReasonStuck},
		{"three different greps with no match", []it{{`!grep({"p":"x"})=exit 1`}, {`!grep({"p":"y"})=exit 1`}, {`!grep({"p":"z"})=exit 1`}}, "", ""},
		{"3 identical replies", []it{{"text:hmm"}, {"text:hmm"}, {"text:hmm"}}, loop.PatternRepeatedMessage, loop.ReasonStuck},
		{"2 identical replies", []it{{"text:hmm"}, {"text:hmm"}}, "", ""},
		{"3 empty replies", []it{{"text:"}, {"text:  "}, {"text:\n"}}, loop.PatternEmptyReplies, loop.ReasonStuck},
		{"alternation", []it{{A}, {B}, {A}, {B}, {A}, {B}}, loop.PatternAlternation, loop.ReasonStuck},
		{"alternation broken", []it{{A}, {B}, {A}, {C}, {A}, {B}}, "", ""},
		{"alternation with changing results", []it{{A}, {B}, {`read({"path":"a"})=x2`}, {B}, {A}, {B}}, "", ""},
		{"3 failed iterations", []it{{"fail"}, {"fail"}, {"#" + B}}, loop.PatternFailedIterations, loop.ReasonStuck},
		{"3 different calls that could not run", []it{{"#" + A}, {"#" + B}, {"#" + C}}, loop.PatternFailedIterations, loop.ReasonStuck},
		{"2 failed then success", []it{{"fail"}, {"fail"}, {A}}, "", ""},
		{"a person's message starts a new window", []it{{"!" + A}, {"!" + A, "user:try the other file"}, {"!" + A}}, "", ""},
		{"repetition after the person's message counts", []it{{"!" + A, "user:go on"}, {"!" + A}, {"!" + A}, {"!" + A}}, loop.PatternRepeatedError, loop.ReasonStuck},
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
	// Nudge after call 3 (the same call with the same error), end after
	// call 4, then the wrap-up call. The model is told in plain words.
	if got := lastUserContent(m.Requests()[3]); got == "x" || !strings.Contains(got, "repeating the same tool call and getting the same error") || strings.Contains(got, "repeated_action") {
		t.Fatalf("no nudge: %q", got)
	}
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonStuck || st.StuckDetections != 2 || st.Answer != "best effort" {
		t.Fatalf("%s %s %d %q", st.Status, st.Reason, st.StuckDetections, st.Answer)
	}
	_ = m
}
