package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/service"
)

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o sessionFlags
	o.register(fs)
	jsonOut := fs.Bool("json", false, "print the final session state as JSON on stdout")
	serverURL := serverFlag(fs)
	showDiff := fs.Bool("diff", false, "print a unified diff of every file the session changed, at the end")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop run [flags] \"task\"")
		fmt.Fprintln(stderr, "\nStarts a session: the model works on the task with tools in --dir until it answers or a limit stops it.")
		fmt.Fprintln(stderr, "Ctrl-C pauses the session and saves it; 'agentloop sessions resume ID' continues it.\n\nFlags:")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nExamples:\n  agentloop run --model script:examples/scripts/fix-test.json --dir /tmp/ws \"Fix the failing test\"")
		fmt.Fprintln(stderr, "  agentloop run --model ollama/qwen3:8b --dir . --verify \"go test ./...\" \"Run the tests and fix any failures\"")
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	o.captureSet(fs)
	task := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if task == "" && o.protocol != "" {
		task = "Run the protocol, one step at a time, following each step's instruction."
	}
	var messages []model.Message
	if o.messagesFile != "" {
		var err error
		if messages, err = loadMessages(o.messagesFile); err != nil {
			fmt.Fprintf(stderr, "agentloop run: --messages %s: %v\n", o.messagesFile, err)
			return exitUsage
		}
		if task != "" {
			messages = append(messages, model.Message{Role: model.RoleUser, Content: task})
		}
	}
	if task == "" && len(messages) == 0 {
		fmt.Fprintln(stderr, "agentloop run: give the task as an argument, e.g. agentloop run \"fix the failing test\" (or a conversation with --messages FILE)")
		return exitUsage
	}
	o.task = task
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "agentloop run: %v\n", err)
		return exitUsage
	}

	if *serverURL != "" {
		return runRemote(*serverURL, &o, task, messages, *jsonOut, stdout, stderr)
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	env, err := o.open(ctx, stderr, nil)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer env.Close()
	spec, err := o.spec(env, task, messages)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	started, err := env.svc.Start(ctx, env.caller, spec)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	code := follow(ctx, env, started.Session, 0, stdout, stderr, *jsonOut)
	if *showDiff && env.ws != nil {
		if d, err := env.ws.Diff(); err != nil {
			fmt.Fprintf(stderr, "diff: %v\n", err)
		} else if d != "" {
			fmt.Fprintf(stderr, "\n%s", d)
		}
	}
	return code
}

// follow shows a session's events after seq after as they are committed,
// waits for it, answering approvals inline on a terminal, then prints the
// outcome and returns the exit code.
func follow(ctx context.Context, env *cliEnv, sess *loop.Session, after int64, stdout, stderr io.Writer, jsonOut bool) int {
	shown := env.readProgress(sess.ID(), after)
	defer shown.stop()
	var st *loop.State
	for {
		if sess != nil {
			env.progress.follow(sess)
			var err error
			st, err = sess.Wait(context.Background())
			if st != nil && err == nil {
				// (After a failed save the state is ahead of the log:
				// the progress display never sees those events.)
				shown.showUpTo(st.Seq)
			}
			env.progress.done()
			if err != nil {
				return fail(stderr, "%v%s", err, storageHint(err, st))
			}
		}
		var res *service.Result
		var err error
		switch {
		case st.Status == loop.StatusWaiting && len(st.PendingApprovals) > 0 && env.interactive && ctx.Err() == nil:
			res, err = askApproval(ctx, env, st, stderr)
		case st.Status == loop.StatusWaiting && st.Reason == loop.ReasonConfirmation && env.interactive && ctx.Err() == nil:
			fmt.Fprintf(stderr, "\n%s\n%s\n> ", safeText(st.LastAnswer()), safeText(st.Question))
			line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
			res, err = env.svc.Reply(ctx, env.caller, st.ID, strings.TrimSpace(line))
		default:
			return report(st, env, stdout, stderr, jsonOut)
		}
		if err != nil {
			return fail(stderr, "%v", err)
		}
		sess = res.Session
		if sess == nil && res.State != nil {
			st = res.State // recorded; still waiting (another approval)
		}
		if sess == nil && res.State == nil {
			return fail(stderr, "session %s: %s", st.ID, res.Outcome)
		}
	}
}

func askApproval(ctx context.Context, env *cliEnv, st *loop.State, stderr io.Writer) (*service.Result, error) {
	p := st.PendingApprovals[0]
	fmt.Fprintf(stderr, "\nThe model wants to run %s with %s\nAllow? [y]es / [a]lways (this exact call, for the rest of the session) / [n]o / [e]dit arguments: ", safeText(p.Name), safeText(string(p.Input)))
	in := bufio.NewReader(os.Stdin)
	answer, _ := in.ReadString('\n')
	d := loop.ApprovalDecision{CallID: p.CallID, ArgsHash: p.ArgsHash}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		d.Approved = true
	case "a", "always":
		d.Approved, d.ForSession = true, true
		fmt.Fprintf(stderr, "Allowed for this session; revoke with: agentloop sessions revoke %s %s%s\n", st.ID, p.ArgsHash, env.again)
	case "e", "edit":
		fmt.Fprint(stderr, "New arguments (JSON on one line): ")
		line, _ := in.ReadString('\n')
		if !json.Valid([]byte(line)) {
			return nil, fmt.Errorf("the edited arguments are not valid JSON: %s", strings.TrimSpace(line))
		}
		d.Approved, d.EditedInput = true, []byte(strings.TrimSpace(line))
	default:
		fmt.Fprint(stderr, "Reason (optional, the model sees it): ")
		reason, _ := in.ReadString('\n')
		d.Reason = strings.TrimSpace(reason)
	}
	return env.svc.Decide(ctx, env.caller, st.ID, d)
}

// report prints the outcome and maps it to an exit code.
func report(st *loop.State, env *cliEnv, stdout, stderr io.Writer, jsonOut bool) int {
	if jsonOut {
		printJSON(stdout, withExitCode(st))
	}
	w := stdout
	if jsonOut {
		w = stderr
	}
	switch st.Status {
	case loop.StatusPaused, loop.StatusWaiting:
		fmt.Fprintf(stderr, "\nSession %s is %s (%s). %s\n", st.ID, st.Status, st.Reason, safeText(firstNonEmpty(st.Question, st.Detail)))
		again, keyNote := "", ""
		if env != nil {
			again = env.again
			if env.keyFromEnv {
				keyNote = "          (with AGENTLOOP_KEY set, as it is now)\n"
			}
		}
		switch {
		case len(st.PendingApprovals) > 0:
			p := st.PendingApprovals[0]
			fmt.Fprintf(stderr, "Approve:  agentloop sessions approve %s %s %s%s\nDeny:     agentloop sessions deny %s %s %s \"reason\"%s\n", st.ID, p.CallID, p.ArgsHash, again, st.ID, p.CallID, p.ArgsHash, again)
		case st.Status == loop.StatusWaiting:
			fmt.Fprintf(stderr, "Reply:    agentloop sessions reply %s \"…\"%s\n", st.ID, again)
		default:
			fmt.Fprintf(stderr, "Resume:   agentloop sessions resume %s%s\n", st.ID, again)
		}
		fmt.Fprint(stderr, keyNote)
		return exitPaused
	}
	if !jsonOut && st.Answer != "" {
		fmt.Fprintln(w, safeText(st.Answer))
	}
	if env != nil && len(st.Modified) > 0 {
		fmt.Fprintf(stderr, "\nFiles changed: %s\n", strings.Join(changedPaths(st), ", "))
	}
	reportVerification(stderr, st)
	fmt.Fprintf(stderr, "\nSession %s %s (%s) after %d steps, %d tool calls, %d tokens", st.ID, st.Status, st.Reason, st.CurrentIteration, st.ToolCallCount, st.Usage.Total())
	if st.CostUSD > 0 {
		fmt.Fprintf(stderr, ", $%.4f", st.CostUSD)
	}
	where := ""
	if env != nil {
		where = env.where
	}
	fmt.Fprintf(stderr, ", %s. Details: agentloop sessions show %s%s\n", st.Duration.Std().Round(time.Millisecond), st.ID, where)
	return exitCode(st)
}

// stateJSON is a session's state as --json prints it: the state and the
// exit code its outcome maps to.
// A running session has no exit code yet.
type stateJSON struct {
	*loop.State
	ExitCode *int `json:"exit_code,omitempty"`
}

func withExitCode(st *loop.State) stateJSON {
	if st.Status == loop.StatusRunning || st.Status == loop.StatusIdle {
		return stateJSON{State: st}
	}
	code := exitCode(st)
	return stateJSON{st, &code}
}

func exitCode(st *loop.State) int {
	switch st.Status {
	case loop.StatusCompleted:
		return exitCompleted
	case loop.StatusPaused, loop.StatusWaiting:
		return exitPaused
	case loop.StatusTerminated:
		return exitTerminated
	}
	switch st.Reason {
	case loop.ReasonMaxIterations, loop.ReasonTimeout, loop.ReasonBudgetTokens, loop.ReasonBudgetCost,
		loop.ReasonBudgetToolCalls, loop.ReasonStuck, loop.ReasonRepetition, loop.ReasonNoProgress:
		return exitLimit
	}
	return exitFailed
}

func changedPaths(st *loop.State) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range st.Modified {
		if !seen[m.Path] {
			seen[m.Path] = true
			out = append(out, m.Path)
		}
	}
	return out
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// interruptContext is cancelled by the first Ctrl-C (the session pauses and
// is saved); a second Ctrl-C exits at once.
func interruptContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		n := 0
		for range ch {
			n++
			if n == 1 {
				fmt.Fprintln(stderr, "\ninterrupted: pausing the session at once (Ctrl-C again to quit without saving)…")
				cancel()
				continue
			}
			os.Exit(130)
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// reportVerification prints the verification outcome and, after a partial
// pass, the plan's completed and remaining steps and a follow-up task.
func reportVerification(w io.Writer, st *loop.State) {
	v := st.Verification
	if v == nil {
		return
	}
	fmt.Fprintf(w, "\nVerification: %s\n", v.Outcome)
	for _, c := range v.Checks {
		mark := "✓"
		if !c.Passed {
			mark = "✗"
		}
		fmt.Fprintf(w, "  %s %s (%d ms)\n", mark, c.Name, c.DurationMS)
	}
	if v.Outcome == loop.VerifyPass {
		return
	}
	var done, remaining []string
	if st.Plan != nil {
		for _, s := range st.Plan.Steps {
			if s.Status == "completed" {
				done = append(done, s.Title)
			} else if s.Status != "skipped" {
				remaining = append(remaining, s.Title)
			}
		}
	}
	if len(done) > 0 {
		fmt.Fprintf(w, "Completed steps: %s\n", strings.Join(done, "; "))
	}
	var failing []string
	for _, c := range v.Checks {
		if !c.Passed {
			failing = append(failing, c.Name)
		}
	}
	follow := "Make these checks pass: " + strings.Join(failing, ", ")
	if len(remaining) > 0 {
		fmt.Fprintf(w, "Remaining steps: %s\n", strings.Join(remaining, "; "))
		follow = "Finish: " + strings.Join(remaining, "; ") + ". " + follow
	}
	fmt.Fprintf(w, "Suggested follow-up task: %q\n", follow)
}

// storageHint says what to do when the session database failed under a
// session: everything recorded before is kept, and the session resumes.
func storageHint(err error, st *loop.State) string {
	msg := strings.ToLower(err.Error())
	id := "ID"
	if st != nil && st.ID != "" {
		id = st.ID
	}
	switch {
	case strings.Contains(msg, "disk is full") || strings.Contains(msg, "no space left"):
		return fmt.Sprintf("\nThe disk holding the session database is full. Free some space, then continue with: agentloop sessions resume %s (everything recorded so far is kept)", id)
	case strings.Contains(msg, "database is locked"):
		return fmt.Sprintf("\nAnother process kept the session database locked for too long. Continue with: agentloop sessions resume %s (everything recorded so far is kept)", id)
	case strings.Contains(msg, "read-only"):
		return "\nThis user may not write the session database; pass --db with a writable path, or fix its permissions."
	}
	return ""
}
