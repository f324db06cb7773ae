package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

func cmdSessions(args []string, stdout, stderr io.Writer) int {
	subs := map[string]func([]string, io.Writer, io.Writer) int{
		"list": sessionsList, "show": sessionsShow, "resume": sessionsResume, "terminate": sessionsTerminate, "pause": sessionsPause, "delete": sessionsDelete,
		"reply": sessionsReply, "approvals": sessionsApprovals, "approve": sessionsApprove, "deny": sessionsDeny, "revoke": sessionsRevoke,
		"recover": sessionsRecover, "follow-up": sessionsFollowUp, "fork": sessionsFork,
		"rewind": sessionsRewind, "compare": sessionsCompare,
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, `Usage: agentloop sessions <command> [flags]

  list                          list sessions, newest first (--status, --unfinished,
                                --label KEY=VALUE, --limit, --json, --forked-from ID: the
                                sessions forked from ID); the filters combine, here or --server
  show ID                       every iteration, tool call, message and usage (--json, --events)
  resume ID                     continue a paused, waiting or interrupted session
  recover                       resume every session a crashed process left running
  pause ID ["note"]             pause a running session after its current step (from any terminal)
  delete ID                     remove a session that no process runs, with its whole log and its
                                workspace checkpoints (kept until no fork of it that is left reads them)
  reply ID "text"               answer a session waiting for you and resume it, or give
                                a running one a message its model sees in its next step
  approvals [--json] [ID]       list tool calls waiting for approval
  approve ID CALL HASH          approve a tool call (--args JSON to change its arguments;
                                --for-session: the same call runs unasked for the rest of the session)
  revoke ID HASH                a call allowed for the session asks again
  deny ID CALL HASH ["reason"]  deny a tool call; the model sees the reason
  fork ID --at K                start a new session from ID's log up to the end of step K, in a new
                                workspace holding that step's files (--model, --message TEXT, --dir NEWDIR)
  compare A B                   two sessions side by side: outcome, totals, each step's tool calls,
                                tokens and time, and the diff of their final workspaces (--json)
  rewind ID --at K              take a stopped session back to the end of step K, its files included:
                                the later steps stay in the log, set aside (--message TEXT resumes it
                                with that message; --dry-run only lists the files it would change)
  follow-up ID                  start a session that finishes what an ended one left: its plan's
                                unfinished steps and failing checks, in the same workspace
  terminate ID ["reason"]       end a session: completed_by_user (→ completed), failed (→ failed),
                                different_approach (→ terminated), stuck (→ error), or any text (→ terminated)

With --server URL (or $AGENTLOOP_SERVER; key in $AGENTLOOP_KEY) every command but recover
talks to that agentloop server instead of the local database.`)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	// fork and compare take --server themselves.
	if url := serverIn(args[1:]); url != "" && args[0] != "fork" && args[0] != "compare" {
		return sessionsRemote(url, args[0], args[1:], stdout, stderr)
	}
	fn, ok := subs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agentloop sessions: unknown command %q (try agentloop sessions -h)\n", args[0])
		return exitUsage
	}
	return fn(args[1:], stdout, stderr)
}

func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", defaultDB(), "session database: a SQLite file, or postgres://USER:PASS@HOST/DB ($AGENTLOOP_DB)")
}

func sessionsList(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	status := fs.String("status", "", "only sessions with this status (running, paused, waiting, completed, failed, terminated, error)")
	unfinished := fs.Bool("unfinished", false, "only sessions that have not ended")
	limit := fs.Int("limit", 50, "at most this many sessions")
	jsonOut := fs.Bool("json", false, "print JSON")
	var labels labelFlags
	fs.Var(&labels, "label", "only sessions with this KEY=VALUE label (repeatable: all of them)")
	forkedFrom := fs.String("forked-from", "", "only the sessions forked from this session (its direct forks)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer st.Close()
	f := store.Filter{Limit: *limit, Unfinished: *unfinished, Labels: labels, ForkedFrom: *forkedFrom}
	if *status != "" {
		st, err := loop.ParseStatus(*status)
		if err != nil {
			fmt.Fprintf(stderr, "agentloop sessions list: %v\n", err)
			return exitUsage
		}
		f.Status = []loop.Status{st}
	}
	list, err := st.List(context.Background(), f)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if noForks(f.ForkedFrom, len(list), *jsonOut, stderr) {
		return 0
	}
	return printList(list, *jsonOut, stdout, stderr)
}

// noForks says, for a table of a session's forks that came out empty,
// how to make one; it reports whether it did.
func noForks(from string, listed int, jsonOut bool, stderr io.Writer) bool {
	if from == "" || listed > 0 || jsonOut {
		return false
	}
	fmt.Fprintf(stderr, "no session was forked from %s (fork it with agentloop sessions fork %s --at K)\n", from, from)
	return true
}

// printList prints sessions as a table, or as JSON.
func printList(list []loop.Summary, jsonOut bool, stdout, stderr io.Writer) int {
	if jsonOut {
		if list == nil {
			list = []loop.Summary{}
		}
		return printJSON(stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(stderr, "no sessions yet — start one with: agentloop run \"your task\"")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tREASON\tSTEPS\tTOKENS\tUPDATED\tTASK")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.ID, s.Status, s.Reason, s.Iteration, s.Tokens, s.UpdatedAt.Local().Format("2006-01-02 15:04"), oneLine(s.Task, 60))
	}
	_ = tw.Flush()
	return 0
}

func loadState(db, id string) (*loop.State, []loop.Event, error) {
	st, err := assemble.OpenStore(db)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	events, err := st.Load(context.Background(), id)
	if err != nil {
		if errors.Is(err, loop.ErrNotFound) {
			return nil, nil, fmt.Errorf("session %q not found (list them with agentloop sessions list)", id)
		}
		return nil, nil, fmt.Errorf("session %s: %w", id, err)
	}
	state, err := loop.Fold(events)
	return state, events, err
}

func sessionsShow(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	jsonOut := fs.Bool("json", false, "print the session state as JSON")
	events := fs.Bool("events", false, "print the raw event log as JSON lines")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: agentloop sessions show [--json|--events] ID")
		return exitUsage
	}
	state, evs, err := loadState(*db, fs.Arg(0))
	if err != nil {
		return fail(stderr, "%v", err)
	}
	switch {
	case *events:
		enc := json.NewEncoder(stdout)
		for _, e := range evs {
			if err := enc.Encode(e); err != nil {
				return fail(stderr, "%v", err)
			}
		}
		return 0
	case *jsonOut:
		return printJSON(stdout, withExitCode(state))
	}
	showState(safeWriter{stdout}, state)
	return 0
}

func showState(w io.Writer, s *loop.State) {
	fmt.Fprintf(w, "Session %s\n", s.ID)
	fmt.Fprintf(w, "  task:      %s\n", s.Task)
	fmt.Fprintf(w, "  model:     %s · mode %s\n", s.Model, s.Mode)
	if len(s.FallbackModels) > 0 {
		fmt.Fprintf(w, "  fallback:  %s", strings.Join(s.FallbackModels, ", "))
		if s.CurrentModel != s.Model {
			fmt.Fprintf(w, " · now on %s", s.CurrentModel)
		}
		fmt.Fprintln(w)
	}
	if s.Workspace != "" {
		fmt.Fprintf(w, "  workspace: %s\n", s.Workspace)
	}
	fmt.Fprintf(w, "  status:    %s", s.Status)
	if s.Reason != "" {
		fmt.Fprintf(w, " (%s)", s.Reason)
	}
	if s.Detail != "" {
		fmt.Fprintf(w, " — %s", s.Detail)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  steps:     %d of %d · %d model calls · %d tool calls\n", s.CurrentIteration, s.MaxIterations, s.InteractionCount, s.ToolCallCount)
	fmt.Fprintf(w, "  usage:     %d input + %d output tokens", s.Usage.InputTokens, s.Usage.OutputTokens)
	if s.CostUSD > 0 {
		fmt.Fprintf(w, " · $%.4f", s.CostUSD)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  stuck:     %s", stuckSettings(s.Limits))
	if s.StuckDetections > 0 {
		fmt.Fprintf(w, " · detected %d×", s.StuckDetections)
	}
	fmt.Fprintln(w)
	for _, c := range s.Condensations {
		fmt.Fprintf(w, "  condensed: %s\n", c)
	}
	for _, hash := range slices.SortedFunc(maps.Keys(s.Allowed), func(a, b string) int { return cmp.Compare(s.Allowed[a].Since, s.Allowed[b].Since) }) {
		al := s.Allowed[hash]
		fmt.Fprintf(w, "  allowed:   %s %s for the session (revoke: agentloop sessions revoke %s %s)\n", al.Name, oneLine(string(al.Input), 80), s.ID, hash)
	}
	fmt.Fprintf(w, "  started:   %s", s.StartedAt.Local().Format(time.DateTime))
	if !s.CompletedAt.IsZero() {
		fmt.Fprintf(w, " · ended %s · took %s", s.CompletedAt.Local().Format(time.DateTime), s.Duration.Std().Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	if s.Plan != nil {
		fmt.Fprintf(w, "  plan:      %s (%s)\n", s.Plan.Goal, s.Plan.Status)
		for i, st := range s.Plan.Steps {
			fmt.Fprintf(w, "             %d. [%s] %s\n", i+1, st.Status, st.Title)
		}
	}
	for _, it := range s.Iterations {
		fmt.Fprintf(w, "\n── Step %d · %s · %s · %d+%d tokens", it.N, it.Status, it.Duration.Std().Round(time.Millisecond), it.Usage.InputTokens, it.Usage.OutputTokens)
		if it.Model != "" && it.Model != s.Model {
			fmt.Fprintf(w, " · %s", it.Model) // a fallback model did this step
		}
		if it.Rewound {
			fmt.Fprint(w, " · rewound: set aside, kept for the record")
		}
		if it.CostUSD > 0 {
			fmt.Fprintf(w, " · $%.4f", it.CostUSD)
		}
		fmt.Fprintln(w)
		if it.Error != "" {
			fmt.Fprintf(w, "   error: %s\n", it.Error)
		}
		for _, m := range it.Messages {
			if m.Role == "tool" {
				continue // shown with its call
			}
			label := string(m.Role)
			if m.Kind != "" {
				label += "/" + string(m.Kind)
			}
			if strings.TrimSpace(m.Content) != "" {
				fmt.Fprintf(w, "   %s: %s\n", label, indent(m.Content, "     "))
			}
		}
		for _, c := range it.ToolCalls {
			fmt.Fprintf(w, "   → %s %s [%s, %s]\n", c.Name, oneLine(string(c.Input), 200), c.Status, c.Duration.Std().Round(time.Millisecond))
			if c.Output != "" {
				fmt.Fprintf(w, "     %s\n", indent(truncate(c.Output, 1500), "     "))
			}
		}
	}
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "\nwarning (%s): %s\n", warn.Code, warn.Message)
	}
	for _, p := range s.PendingApprovals {
		fmt.Fprintf(w, "\nwaiting for approval: %s %s (call %s, hash %s)\n", p.Name, string(p.Input), p.CallID, p.ArgsHash)
	}
	if len(s.Modified) > 0 {
		fmt.Fprintf(w, "\nFiles changed: %s\n", strings.Join(changedPaths(s), ", "))
	}
	if s.Answer != "" {
		label := "Answer"
		if s.Partial {
			label = "Partial answer"
		}
		fmt.Fprintf(w, "\n%s:\n%s\n", label, s.Answer)
	}
}

// stuckSettings describes when stuck detection fires and what it does.
func stuckSettings(l loop.Limits) string {
	errs, other := l.StuckThresholds()
	action := l.OnStuck
	if action == "" {
		action = "pause"
	}
	then := "tell the model, then " + action
	if l.StuckNoNudge {
		then = action + " at once"
	}
	return fmt.Sprintf("same call and result %d× (an error %d×) → %s", other, errs, then)
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n[… %d more bytes; see --json]", len(s)-n)
}

// printJSON prints v as indented JSON, or compact when it nests deeper
// than maxIndentDepth: indentation grows with depth, so a model's deeply
// nested tool arguments would otherwise turn kilobytes into megabytes.
func printJSON(w io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return exitFailed
	}
	if nesting(b) <= maxIndentDepth {
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil {
			b = buf.Bytes()
		}
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return exitFailed
	}
	return 0
}

const maxIndentDepth = 32

// nesting returns the deepest nesting of objects and arrays in valid JSON.
func nesting(b []byte) int {
	depth, deepest, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// continueSession rebuilds the environment of a stored session and runs
// act (resume, reply, decide) through the control service, then follows
// the session like run does when it runs here; when another process runs
// it, the request goes to that process and this waits for its outcome.
func continueSession(name string, args []string, nargs int, stdout, stderr io.Writer,
	act func(ctx context.Context, env *cliEnv, id string, rest []string, fs *flag.FlagSet) (*service.Result, error)) int {
	fs := flag.NewFlagSet("sessions "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o sessionFlags
	o.register(fs)
	jsonOut := fs.Bool("json", false, "print the session's state as JSON on stdout once it stops (as run --json)")
	if name == "approve" {
		fs.String("args", "", "replace the call's arguments with this JSON")
		fs.Bool("for-session", false, "allow this exact call (tool and arguments) for the rest of the session: it runs without asking until revoked")
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	o.captureSet(fs)
	if fs.NArg() < nargs {
		fmt.Fprintf(stderr, "agentloop sessions %s: missing arguments (see agentloop sessions -h)\n", name)
		return exitUsage
	}
	id := fs.Arg(0)
	rec, code := o.openRecorded(name, id, stderr)
	if rec == nil {
		return code
	}
	defer rec.close()
	res, err := act(rec.ctx, rec.env, id, fs.Args()[1:], fs)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	return afterControl(rec.ctx, rec.env, res, rec.state.Seq, *jsonOut, stdout, stderr)
}

// afterControl shows what a control did: it follows a session that now
// runs here, reports one that stopped, and waits for a request another
// process honours. With jsonOut, stdout gets the stopped session's state
// (as run --json) or {"id", "outcome"}.
func afterControl(ctx context.Context, env *cliEnv, res *service.Result, seq int64, jsonOut bool, stdout, stderr io.Writer) int {
	outcome := func(id, outcome string) {
		if jsonOut {
			printJSON(stdout, struct {
				ID      string `json:"id"`
				Outcome string `json:"outcome"`
			}{id, outcome})
			return
		}
		fmt.Fprintf(stdout, "session %s: %s\n", id, outcome)
	}
	if res.Request != nil {
		fmt.Fprintln(stderr, res.Outcome)
		wctx, cancel := context.WithTimeout(ctx, controlWait)
		defer cancel()
		ctl, applied, err := env.svc.WaitControl(wctx, env.caller, res.Request.ID)
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(stderr, "the process running session %s has not taken request %d yet; it stays queued\n", res.ID, res.Request.ID)
			return exitFailed
		}
		if err != nil {
			return fail(stderr, "%v", err)
		}
		if applied == nil || !jsonOut { // with jsonOut, the state that follows says it
			outcome(res.ID, ctl.Outcome)
		}
		if applied != nil {
			res = applied
		} else {
			if strings.HasPrefix(ctl.Outcome, "refused") {
				return exitFailed
			}
			return 0
		}
	}
	if res.Session != nil {
		return follow(ctx, env, res.Session, seq, stdout, stderr, jsonOut)
	}
	if res.State != nil {
		return report(res.State, env, stdout, stderr, jsonOut)
	}
	outcome(res.ID, res.Outcome)
	return 0
}

// controlWait is how long a control command waits for the process running
// the session to honour it.
const controlWait = time.Minute

func sessionsResume(args []string, stdout, stderr io.Writer) int {
	return continueSession("resume", args, 1, stdout, stderr, func(ctx context.Context, env *cliEnv, id string, rest []string, _ *flag.FlagSet) (*service.Result, error) {
		return env.svc.Resume(ctx, env.caller, id, strings.Join(rest, " "))
	})
}

func sessionsReply(args []string, stdout, stderr io.Writer) int {
	return continueSession("reply", args, 2, stdout, stderr, func(ctx context.Context, env *cliEnv, id string, rest []string, _ *flag.FlagSet) (*service.Result, error) {
		return env.svc.Reply(ctx, env.caller, id, strings.Join(rest, " "))
	})
}

func sessionsApprove(args []string, stdout, stderr io.Writer) int {
	return continueSession("approve", args, 3, stdout, stderr, func(ctx context.Context, env *cliEnv, id string, rest []string, fs *flag.FlagSet) (*service.Result, error) {
		d := loop.ApprovalDecision{CallID: rest[0], ArgsHash: rest[1], Approved: true, ForSession: fs.Lookup("for-session").Value.String() == "true"}
		if a := fs.Lookup("args").Value.String(); a != "" {
			if !json.Valid([]byte(a)) {
				return nil, fmt.Errorf("--args is not valid JSON: %s", a)
			}
			d.EditedInput = []byte(a)
		}
		return env.svc.Decide(ctx, env.caller, id, d)
	})
}

// sessionsRevoke ends a call's allowance for the session: it asks again.
func sessionsRevoke(args []string, stdout, stderr io.Writer) int {
	return continueSession("revoke", args, 2, stdout, stderr, func(ctx context.Context, env *cliEnv, id string, rest []string, _ *flag.FlagSet) (*service.Result, error) {
		return env.svc.Decide(ctx, env.caller, id, loop.ApprovalDecision{ArgsHash: rest[0], Revoke: true, Reason: strings.Join(rest[1:], " ")})
	})
}

func sessionsDeny(args []string, stdout, stderr io.Writer) int {
	return continueSession("deny", args, 3, stdout, stderr, func(ctx context.Context, env *cliEnv, id string, rest []string, _ *flag.FlagSet) (*service.Result, error) {
		return env.svc.Decide(ctx, env.caller, id, loop.ApprovalDecision{CallID: rest[0], ArgsHash: rest[1], Reason: strings.Join(rest[2:], " ")})
	})
}

func sessionsApprovals(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions approvals", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	jsonOut := fs.Bool("json", false, "print the waiting calls as a JSON array")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	ids := fs.Args()
	if len(ids) == 0 {
		st, err := assemble.OpenStore(*db)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		list, err := st.List(context.Background(), store.Filter{Status: []loop.Status{loop.StatusWaiting}})
		st.Close()
		if err != nil {
			return fail(stderr, "%v", err)
		}
		for _, s := range list {
			ids = append(ids, s.ID)
		}
	}
	var states []*loop.State
	for _, id := range ids {
		state, _, err := loadState(*db, id)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		states = append(states, state)
	}
	again := ""
	if *db != defaultDB() {
		again = " --db " + shellQuote(*db)
	}
	return printApprovals(states, again, *jsonOut, stdout, stderr)
}

func sessionsTerminate(args []string, stdout, stderr io.Writer) int {
	return recordOnly("terminate", "ID [reason]", args, stdout, stderr, func(ctx context.Context, env *cliEnv, id, text string) (*service.Result, error) {
		return env.svc.Terminate(ctx, env.caller, id, text)
	})
}

func sessionsDelete(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions delete", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	jsonOut := fs.Bool("json", false, `print {"id", "deleted": true}`)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: agentloop sessions delete ID")
		return exitUsage
	}
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	env := &cliEnv{store: st, caller: localCaller()}
	defer env.Close()
	// Checkpoints: the session's workspace snapshots go with it, unless a
	// living fork still reads them.
	if env.svc, err = service.New(service.Config{Store: st, Runner: loop.Config{}, Checkpoints: checkpointsFor(*db), PrivateDirs: sandbox.DefaultPrivateBase()}); err != nil {
		return fail(stderr, "%v", err)
	}
	if err := env.svc.Delete(context.Background(), env.caller, fs.Arg(0)); err != nil {
		return fail(stderr, "%v", err)
	}
	return printDeleted(fs.Arg(0), *jsonOut, stdout)
}

func sessionsPause(args []string, stdout, stderr io.Writer) int {
	return recordOnly("pause", "ID [note]", args, stdout, stderr, func(ctx context.Context, env *cliEnv, id, text string) (*service.Result, error) {
		return env.svc.Pause(ctx, env.caller, id, text)
	})
}

// recordOnly runs a control that needs no model here (terminate, pause):
// the process running the session honours it, or this one records it.
func recordOnly(name, usage string, args []string, stdout, stderr io.Writer,
	act func(ctx context.Context, env *cliEnv, id, text string) (*service.Result, error)) int {
	fs := flag.NewFlagSet("sessions "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	jsonOut := fs.Bool("json", false, `print {"id", "outcome", "status"}, or the session's state when this process applied it`)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() < 1 {
		fmt.Fprintf(stderr, "usage: agentloop sessions %s %s\n", name, usage)
		return exitUsage
	}
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	env := &cliEnv{store: st, caller: localCaller()}
	defer env.Close()
	if env.svc, err = service.New(service.Config{Store: st, Runner: loop.Config{}, PrivateDirs: sandbox.DefaultPrivateBase()}); err != nil {
		return fail(stderr, "%v", err)
	}
	ctx := context.Background()
	id := fs.Arg(0)
	res, err := act(ctx, env, id, strings.Join(fs.Args()[1:], " "))
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if res.Warning != "" {
		fmt.Fprintf(stderr, "agentloop sessions %s: %s\n", name, res.Warning)
	}
	if res.Request == nil && res.State != nil {
		if *jsonOut {
			return printJSON(stdout, withExitCode(res.State))
		}
		fmt.Fprintf(stdout, "session %s ended %s (%s): %s\n", res.State.ID, res.State.Status, res.State.Reason, res.State.Detail)
		return 0
	}
	return afterControl(ctx, env, res, 0, *jsonOut, stdout, stderr)
}

// sessionsRecover resumes, one after another, every session whose process
// died while it ran (status running in the database).
func sessionsRecover(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions recover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	jsonOut := fs.Bool("json", false, "print the recovered sessions' states, once each stops, as a JSON array")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	svc, err := service.New(service.Config{Store: st, Runner: loop.Config{}, Checkpoints: checkpointsFor(*db)})
	if err != nil {
		st.Close()
		return fail(stderr, "%v", err)
	}
	// A rewind a crash cut short is finished (its files restored) or,
	// when it was never recorded, dropped.
	settled, err := svc.SettleRewinds(context.Background(), localCaller())
	for _, id := range settled {
		fmt.Fprintf(stderr, "settled the rewind of session %s that a stopped process left unfinished\n", id)
	}
	worst := 0
	if err != nil {
		fmt.Fprintf(stderr, "agentloop sessions recover: %v\n", err)
		worst = exitFailed
	}
	list, err := svc.Abandoned(context.Background(), localCaller())
	svc.Close()
	st.Close()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if len(list) == 0 {
		fmt.Fprintln(stderr, "no session was left running (sessions that a live process runs are its own)")
	}
	states := []json.RawMessage{} // with --json: each resumed session's state, [] for none
	for _, s := range list {
		fmt.Fprintf(stderr, "recovering session %s: %s\n", s.ID, oneLine(s.Task, 60))
		if !*jsonOut {
			worst = max(worst, sessionsResume([]string{"--db", *db, s.ID}, stdout, stderr))
			continue
		}
		var out bytes.Buffer
		code := sessionsResume([]string{"--db", *db, "--json", s.ID}, &out, stderr)
		worst = max(worst, code)
		if st := bytes.TrimSpace(out.Bytes()); json.Valid(st) && len(st) > 0 {
			states = append(states, st)
		}
	}
	if *jsonOut {
		worst = max(worst, printJSON(stdout, states))
	}
	return worst
}

// printApprovals lists the tool calls waiting for approval, with the
// commands that decide them.
func printApprovals(states []*loop.State, again string, jsonOut bool, stdout, stderr io.Writer) int {
	if jsonOut {
		type waiting struct {
			SessionID string `json:"session_id"`
			loop.PendingApproval
		}
		out := []waiting{}
		for _, state := range states {
			for _, p := range state.PendingApprovals {
				out = append(out, waiting{state.ID, p})
			}
		}
		return printJSON(stdout, out)
	}
	n := 0
	for _, state := range states {
		id := state.ID
		for _, p := range state.PendingApprovals {
			n++
			fmt.Fprintf(stdout, "%s  %s %s\n    approve: agentloop sessions approve %s %s %s%s\n    deny:    agentloop sessions deny %s %s %s \"reason\"%s\n",
				id, safeText(p.Name), safeText(oneLine(string(p.Input), 200)), id, p.CallID, p.ArgsHash, again, id, p.CallID, p.ArgsHash, again)
		}
	}
	if n == 0 {
		fmt.Fprintln(stderr, "no tool calls are waiting for approval")
	}
	return 0
}
