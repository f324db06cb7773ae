package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/service"
)

// sessionsCompare sets two sessions side by side — outcome, totals, each
// step's tool calls, tokens, cost and time — and prints the diff from
// A's final workspace to B's. --json prints what GET
// /v1/sessions/compare answers.
func sessionsCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	server := serverFlag(fs)
	jsonOut := fs.Bool("json", false, "print the comparison as JSON (as GET /v1/sessions/compare answers)")
	noDiff := fs.Bool("no-diff", false, "leave the diff out (the changed files are still listed)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "agentloop sessions compare: usage: agentloop sessions compare A B [--json] [--no-diff]")
		return exitUsage
	}
	a, b := fs.Arg(0), fs.Arg(1)
	ctx := context.Background()
	var cmp *api.Comparison
	if *server != "" {
		got, err := remote(*server).Compare(ctx, a, b)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		cmp = &got
	} else {
		st, err := assemble.OpenStore(*db)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		defer st.Close()
		// A service that runs nothing: it reads the two logs and, for a
		// workspace that is gone, the checkpoints.
		svc, err := service.New(service.Config{Store: st, Checkpoints: checkpointsFor(*db)})
		if err != nil {
			return fail(stderr, "%v", err)
		}
		defer svc.Close()
		if cmp, err = svc.Compare(ctx, localCaller(), a, b); err != nil {
			return fail(stderr, "%v", err)
		}
	}
	if *jsonOut {
		return printJSON(stdout, cmp)
	}
	printComparison(stdout, cmp, !*noDiff)
	return 0
}

// printComparison writes the comparison for people: the two outcomes
// side by side, then the steps (a step B shares with A, as a fork's
// copied steps do, says so), then the files and the diff.
func printComparison(w io.Writer, c *api.Comparison, withDiff bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	origin := func(s api.CompareSide) string {
		if f := s.ForkedFrom; f != nil {
			return fmt.Sprintf("fork of %s at step %d", f.ID, f.Iteration)
		}
		return ""
	}
	row := func(name, a, b string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, cell(a, 48), cell(b, 48)) }
	row("", "A: "+c.A.ID, "B: "+c.B.ID)
	if oa, ob := origin(c.A), origin(c.B); oa != "" || ob != "" {
		row("forked", oa, ob)
	}
	row("task", c.A.Task, c.B.Task)
	row("model", c.A.Model, c.B.Model)
	row("outcome", outcome(c.A), outcome(c.B))
	row("answer", c.A.Answer, c.B.Answer)
	row("steps", fmt.Sprint(c.A.Steps), fmt.Sprint(c.B.Steps))
	row("tool calls", fmt.Sprint(c.A.ToolCalls), fmt.Sprint(c.B.ToolCalls))
	row("tokens in+out", fmt.Sprintf("%d+%d", c.A.InputTokens, c.A.OutputTokens), fmt.Sprintf("%d+%d", c.B.InputTokens, c.B.OutputTokens))
	row("cost", fmt.Sprintf("$%.4f", c.A.CostUSD), fmt.Sprintf("$%.4f", c.B.CostUSD))
	row("duration", humanSeconds(c.A.Duration), humanSeconds(c.B.Duration))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "STEP\tA\tB")
	for _, s := range c.Steps {
		b := stepCell(s.B, c.B.Model)
		if s.A != nil && s.B != nil && reflect.DeepEqual(*s.A, *s.B) {
			b = "= same as A"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", s.Number, cell(stepCell(s.A, c.A.Model), 56), cell(b, 56))
	}
	_ = tw.Flush()

	fmt.Fprintf(w, "\nFiles from A's workspace (%s) to B's (%s): ", c.A.Workspace, c.B.Workspace)
	if len(c.Files) == 0 {
		fmt.Fprintln(w, "the same")
		return
	}
	fmt.Fprintf(w, "%d differ\n", len(c.Files))
	for _, f := range c.Files {
		fmt.Fprintf(w, "  %-9s %s\n", f.Change, safeText(f.Path))
	}
	if withDiff && c.Diff != "" {
		fmt.Fprintln(w)
		fmt.Fprint(w, safeDiff(c.Diff))
		if c.DiffTruncated {
			fmt.Fprintln(w, "… the diff is longer: it was cut at 1 MiB")
		}
	}
}

func outcome(s api.CompareSide) string {
	if s.Reason == "" || s.Reason == s.Status {
		return s.Status
	}
	return s.Status + " (" + s.Reason + ")"
}

// stepCell is one step briefly: status, tool calls, tokens, time, and
// its model when it is not the session's (a fallback's, or the
// original's in a fork's copied steps).
func stepCell(s *api.StepSide, sessionModel string) string {
	if s == nil {
		return "—"
	}
	var calls []string
	for _, tc := range s.ToolCalls {
		name := tc.ToolName
		if tc.Status != "success" {
			name += "(" + tc.Status + ")"
		}
		calls = append(calls, name)
	}
	parts := []string{s.Status}
	if len(calls) > 0 {
		parts = append(parts, strings.Join(calls, ","))
	}
	parts = append(parts, fmt.Sprintf("%d+%d tok", s.InputTokens, s.OutputTokens), humanSeconds(s.Duration))
	if s.Model != "" && s.Model != sessionModel {
		parts = append(parts, filepath.Base(s.Model))
	}
	return strings.Join(parts, " · ")
}

// humanSeconds rounds the API's "1.234567s" for people: "1.235s", "704µs".
func humanSeconds(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil {
		return s
	}
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// cell is s on one line, at most n runes, safe for a terminal.
func cell(s string, n int) string {
	s = safeText(oneLine(s, n))
	if s == "" {
		return "-"
	}
	return s
}

// safeDiff is a diff with every line safe for a terminal (no escape
// sequences a workspace file could carry).
func safeDiff(d string) string {
	lines := strings.SplitAfter(d, "\n")
	for i, l := range lines {
		body, nl := strings.CutSuffix(l, "\n")
		lines[i] = safeText(body)
		if nl {
			lines[i] += "\n"
		}
	}
	return strings.Join(lines, "")
}
