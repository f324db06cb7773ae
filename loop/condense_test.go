package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/tool"
)

// bigTool returns n bytes of output.
func bigTool(n int) tool.Tool {
	return tool.Func(model.ToolSpec{Name: "dump", Parameters: objSchema}, func(context.Context, json.RawMessage) (tool.Result, error) {
		return tool.Result{Output: strings.Repeat("log line\n", n/9)}, nil
	})
}

// Near the context window the conversation is condensed — old tool output
// first, then a summary of the oldest turns — recorded as an event, so the
// fold rebuilds exactly what the model saw; the session goes on.
func TestConversationIsCondensedNearTheWindow(t *testing.T) {
	e := newEnv()
	var steps []scripted.Step
	for i := range 6 {
		steps = append(steps, scripted.Call("dump", `{"path":"`+strings.Repeat("x", i+1)+`"}`))
	}
	steps = append(steps, scripted.Text("done"))
	m := scripted.Replies(steps...)
	// Each result is ~4,000 bytes ≈ 1,000 tokens; the window holds ~3 of them.
	r := e.runner(t, m, []tool.Tool{bigTool(4000)}, func(c *loop.Config) { c.Limits.ContextTokens = 3000 })
	st := run(t, r, "collect the logs")
	checkScript(t, m)
	if st.Status != loop.StatusCompleted {
		t.Fatalf("%s (%s) %s", st.Status, st.Reason, st.Detail)
	}
	evs, _ := e.log.Load(t.Context(), st.ID)
	condensations := 0
	for _, ev := range evs {
		if c, ok := ev.Data.(*loop.ConversationCondensed); ok {
			condensations++
			if c.TokensAfter >= c.TokensBefore {
				t.Fatalf("a condensation that freed nothing: %+v", c)
			}
		}
	}
	if condensations == 0 {
		t.Fatal("never condensed")
	}
	last := m.Requests()[len(m.Requests())-1]
	size := 0
	for _, msg := range last.Messages {
		size += len(msg.Content)
	}
	if size > 3000*4 || last.Messages[0].Content != "collect the logs" {
		t.Fatalf("last request: %d bytes, first message %q (the task must stay)", size, last.Messages[0].Content)
	}
	stubbed := false
	for _, msg := range last.Messages {
		stubbed = stubbed || strings.Contains(msg.Content, "removed to save context") || strings.Contains(msg.Content, "Summary of earlier steps")
	}
	if !stubbed {
		t.Fatal("no stub or summary in the last request")
	}
	refold(t, e, st)
}

// When even a condensed conversation cannot fit, the session ends with a
// clear reason instead of looping.
func TestContextExhaustedEnds(t *testing.T) {
	e := newEnv()
	m := scripted.Replies(scripted.Text("unreachable"))
	r := e.runner(t, m, []tool.Tool{bigTool(10)}, func(c *loop.Config) { c.Limits.ContextTokens = 100 })
	st := run(t, r, strings.Repeat("a very long task ", 200))
	if st.Status != loop.StatusFailed || st.Reason != loop.ReasonContextExhausted || !strings.Contains(st.Detail, "context window") {
		t.Fatalf("%s (%s) %s", st.Status, st.Reason, st.Detail)
	}
	if len(m.Requests()) != 0 {
		t.Fatal("the model was called with a conversation that cannot fit")
	}
}

// ownModel is one model answering both the session's requests (main) and
// summary requests (summaries), as a session's own model does.
func ownModel(main, summaries model.Model) model.Model {
	return model.Func(func(ctx context.Context, req *model.Request, stream model.StreamFunc) (*model.Response, error) {
		if len(req.Messages) == 1 && strings.Contains(req.Messages[0].Content, "context-aware state summary") {
			return summaries.Generate(ctx, req, stream)
		}
		return main.Generate(ctx, req, stream)
	})
}

// dumpSession is twelve calls with short results (too short to stub) that
// outgrow a window of summaryWindow tokens, so turns are dropped.
func dumpSession() *scripted.Model {
	var steps []scripted.Step
	for i := range 12 {
		steps = append(steps, scripted.Call("dump", `{"path":"`+strings.Repeat("x", i+1)+`"}`))
	}
	return scripted.Replies(append(steps, scripted.Text("done"))...)
}

const summaryWindow = 600

func condensations(t *testing.T, e *env, id string) []*loop.ConversationCondensed {
	t.Helper()
	evs, err := e.log.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []*loop.ConversationCondensed
	for _, ev := range evs {
		if c, ok := ev.Data.(*loop.ConversationCondensed); ok {
			out = append(out, c)
		}
	}
	return out
}

// With condense: model, the session's own model writes the summary of the
// dropped turns: the request carries the dropped messages (and the
// previous summary), the summary is what the model sees next and is
// recorded whole, and the call's tokens and cost count in the session's.
func TestCondensationByModel(t *testing.T) {
	e := newEnv()
	m := dumpSession()
	summaries := scripted.New(&scripted.Script{Repeat: true, Steps: []scripted.Step{
		scripted.Text("USER_CONTEXT: collect the logs\nCOMPLETED: dumped the logs of x, xx\nPENDING: the rest").
			WithUsage(model.Usage{InputTokens: 900, OutputTokens: 30}),
	}})
	r := e.runner(t, ownModel(m, summaries), []tool.Tool{bigTool(290)}, func(c *loop.Config) {
		c.Limits.ContextTokens = summaryWindow
		c.Limits.Condense = loop.CondensedByModel
		c.Price = func(name string, u model.Usage) (float64, bool) { return float64(u.Total()) / 1e6, true }
	})
	st := run(t, r, "collect the logs")
	checkScript(t, m)
	if st.Status != loop.StatusCompleted {
		t.Fatalf("%s (%s) %s", st.Status, st.Reason, st.Detail)
	}
	var byModel []*loop.ConversationCondensed
	for _, c := range condensations(t, e, st.ID) {
		if c.By == loop.CondensedByModel {
			byModel = append(byModel, c)
		}
	}
	if len(byModel) < 2 {
		t.Fatalf("want at least two summaries by model, got %d", len(byModel))
	}
	var want model.Usage
	for _, c := range byModel {
		if !c.Asked || c.Model != "" || c.Usage != (model.Usage{InputTokens: 900, OutputTokens: 30}) || c.CostUSD != 930/1e6 || c.SummaryError != "" ||
			!strings.HasSuffix(c.Summary, "PENDING: the rest") || c.TokensAfter >= c.TokensBefore {
			t.Fatalf("condensation: %+v", c)
		}
		want = want.Add(c.Usage)
	}
	reqs := summaries.Requests()
	if len(reqs) != len(byModel) || !strings.Contains(reqs[0].Messages[0].Content, `call dump({"path":"x"})`) ||
		!strings.Contains(reqs[0].Messages[0].Content, "<PREVIOUS SUMMARY>\n\n</PREVIOUS SUMMARY>") {
		t.Fatalf("%d summary requests for %d summaries; first:\n%s", len(reqs), len(byModel), reqs[0].Messages[0].Content)
	}
	if !strings.Contains(reqs[1].Messages[0].Content, "<PREVIOUS SUMMARY>\nUSER_CONTEXT: collect the logs") {
		t.Fatalf("the second summary request lacks the first summary:\n%s", reqs[1].Messages[0].Content)
	}
	last := m.Requests()[len(m.Requests())-1]
	if !strings.Contains(last.Messages[1].Content, "COMPLETED: dumped the logs") || last.Messages[0].Content != "collect the logs" {
		t.Fatalf("the last request does not carry the summary after the task: %q", last.Messages[1].Content)
	}
	var main model.Usage
	evs, _ := e.log.Load(t.Context(), st.ID)
	for _, ev := range evs {
		if r, ok := ev.Data.(*loop.ModelResponded); ok {
			main = main.Add(r.Usage)
		}
	}
	if st.Usage != main.Add(want) || st.InteractionCount != len(m.Requests())+len(byModel) {
		t.Fatalf("usage %+v, want the replies' %+v and the summaries' %+v; %d model calls", st.Usage, main, want, st.InteractionCount)
	}
	if got, wantUSD := st.CostUSD, float64(main.Total()+want.Total())/1e6; got < wantUSD-1e-9 || got > wantUSD+1e-9 {
		t.Fatalf("cost %v, want %v", got, wantUSD)
	}
	// The state says where and how, for people and every front end.
	shown := 0
	for _, c := range st.Condensations {
		if c.By == loop.CondensedByModel {
			shown++
			if c.Iteration < 2 || c.Dropped == 0 || c.Usage.InputTokens != 900 ||
				!strings.Contains(c.String(), "messages replaced by a summary written by the session's model · 900+30 tokens") {
				t.Fatalf("condensation as shown: %+v %q", c, c)
			}
		}
	}
	if shown != len(byModel) {
		t.Fatalf("the state shows %d summaries by model of %d", shown, len(byModel))
	}
	refold(t, e, st) // the fold needs no model: the summaries are in the log
}

// A summary call that fails leaves the digest in its place, says why, and
// the session goes on.
func TestCondensationByModelFallsBackToTheDigest(t *testing.T) {
	e := newEnv()
	m := dumpSession()
	summaries := scripted.New(&scripted.Script{Repeat: true, Steps: []scripted.Step{
		scripted.Fail(errors.New("HTTP 500 from the summariser")),
	}})
	r := e.runner(t, ownModel(m, summaries), []tool.Tool{bigTool(290)}, func(c *loop.Config) {
		c.Limits.ContextTokens = summaryWindow
		c.Limits.Condense = loop.CondensedByModel
	})
	st := run(t, r, "collect the logs")
	checkScript(t, m)
	if st.Status != loop.StatusCompleted {
		t.Fatalf("%s (%s) %s", st.Status, st.Reason, st.Detail)
	}
	dropped := 0
	for _, c := range condensations(t, e, st.ID) {
		if c.By == "" {
			continue // only stubs
		}
		dropped++
		if c.By != loop.CondensedByDigest || !c.Asked || !strings.Contains(c.SummaryError, "HTTP 500 from the summariser") ||
			!strings.HasPrefix(c.Summary, "Summary of earlier steps, condensed") {
			t.Fatalf("condensation: %+v", c)
		}
	}
	if dropped == 0 {
		t.Fatal("nothing was dropped")
	}
	refold(t, e, st)
}

// condense_model names another model for summaries: it is opened through
// the Env, recorded in the event, and its calls are not the session's own
// model's (a scripted session model resumes at the right step).
func TestCondensationByAnotherModel(t *testing.T) {
	e := newEnv()
	m := dumpSession()
	summaries := scripted.New(&scripted.Script{Repeat: true, Steps: []scripted.Step{
		scripted.Text("COMPLETED: some dumps").WithUsage(model.Usage{InputTokens: 700, OutputTokens: 10}),
	}})
	var opened []string
	r := e.runner(t, nil, nil, func(c *loop.Config) {
		c.Model = nil
		c.Limits.ContextTokens = summaryWindow
		c.Limits.Condense = loop.CondensedByModel
		c.Limits.CondenseModel = "cheap/summariser"
		reg, _ := tool.NewRegistry(bigTool(290))
		c.Resolve = func(context.Context, *loop.SessionStarted, *loop.State) (*loop.Env, error) {
			return &loop.Env{Model: m, Tools: reg, SwitchModel: func(spec string) (model.Model, error) {
				opened = append(opened, spec)
				return summaries, nil
			}}, nil
		}
	})
	st := run(t, r, "collect the logs")
	checkScript(t, m)
	n := 0
	for _, c := range condensations(t, e, st.ID) {
		if c.By == loop.CondensedByModel {
			n++
			if c.Model != "cheap/summariser" || c.Usage.InputTokens != 700 {
				t.Fatalf("condensation: %+v", c)
			}
		}
	}
	if n == 0 || len(opened) == 0 || opened[0] != "cheap/summariser" {
		t.Fatalf("%d summaries, opened %v", n, opened)
	}
	if st.InteractionCount != len(m.Requests()) {
		t.Fatalf("%d model calls counted, the session's model made %d", st.InteractionCount, len(m.Requests()))
	}
	refold(t, e, st)
}

// A token budget that cannot pay for the summary and the call after it
// keeps the digest and makes no summary call; summaries it can pay for
// are made, and the session never spends past its budget.
func TestCondensationByModelWithinTheBudget(t *testing.T) {
	allRefused, allAsked := 0, 0
	for _, budget := range []int{3000, 4000, 6000} {
		e := newEnv()
		m := dumpSession()
		summaries := scripted.New(&scripted.Script{Repeat: true, Steps: []scripted.Step{scripted.Text("COMPLETED: dumps")}})
		r := e.runner(t, ownModel(m, summaries), []tool.Tool{bigTool(290)}, func(c *loop.Config) {
			c.Limits.ContextTokens = summaryWindow
			c.Limits.Condense = loop.CondensedByModel
			c.Limits.BudgetTokens = budget
			c.Limits.MaxOutputTokens = 50
		})
		st := run(t, r, "collect the logs")
		refused, asked := 0, 0
		for _, c := range condensations(t, e, st.ID) {
			if c.Asked {
				asked++
			}
			if strings.Contains(c.SummaryError, "token budget") {
				refused++
				if c.Asked || c.By != loop.CondensedByDigest {
					t.Fatalf("condensation: %+v", c)
				}
			}
		}
		allRefused, allAsked = allRefused+refused, allAsked+asked
		if asked != len(summaries.Requests()) || st.Usage.Total() > budget {
			t.Fatalf("budget %d: %d summaries asked, %d made; %d tokens used", budget, asked, len(summaries.Requests()), st.Usage.Total())
		}
	}
	if allRefused == 0 || allAsked == 0 {
		t.Fatalf("over the budgets, %d summaries refused and %d asked: the test no longer tells them apart", allRefused, allAsked)
	}
}
