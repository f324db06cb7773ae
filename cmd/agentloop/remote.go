package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/client"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
)

// The CLI as a client of `agentloop serve`: with --server URL (or
// $AGENTLOOP_SERVER), run and sessions talk to that server over HTTP
// and print what they print locally. The key is $AGENTLOOP_KEY.

// serverFlag registers --server on a command's flags.
func serverFlag(fs *flag.FlagSet) *string {
	return fs.String("server", os.Getenv("AGENTLOOP_SERVER"), "URL of an agentloop server to use instead of the local database ($AGENTLOOP_SERVER; the key is $AGENTLOOP_KEY)")
}

func remote(url string) *client.Client {
	return &client.Client{Base: url, Key: os.Getenv("AGENTLOOP_KEY")}
}

// runRemote starts a session on the server and follows it like run does.
func runRemote(url string, o *sessionFlags, task string, messages []model.Message, jsonOut bool, stdout, stderr io.Writer) int {
	c := remote(url)
	req := o.startRequest(task, messages)
	if o.set["model"] || os.Getenv("AGENTLOOP_MODEL") != "" {
		req.Model = o.model
		if path, ok := strings.CutPrefix(o.model, "script:"); ok && !strings.HasPrefix(path, "/") {
			if spec, err := absScript(path); err == nil {
				req.Model = spec // the server reads it from its own directory
			}
		}
	}
	if o.set["dir"] {
		req.Workspace = o.dir // a directory of the server's
	}
	if req.Protocol != "" {
		if p, err := assemble.AbsPath(req.Protocol); err == nil {
			req.Protocol = p // the server reads it from its own directory
		}
	}
	ctx := context.Background()
	created, err := c.Start(ctx, req)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	return followRemote(c, created.ID, 0, o.maxIterations, jsonOut, o.quiet, stdout, stderr)
}

// stateOf reads a session's whole state from the server.
func stateOf(ctx context.Context, c *client.Client, id string) (*loop.State, error) {
	var st loop.State
	if err := c.Get(ctx, id, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// summariesOf reads listed summaries as the local list prints them.
func summariesOf(in []api.Summary) []loop.Summary {
	out := make([]loop.Summary, len(in))
	for i, s := range in {
		out[i] = loop.Summary{ID: s.ID, Tenant: s.Tenant, Task: s.Task, Model: s.Model, Status: loop.Status(s.Status), Reason: loop.StopReason(s.Reason),
			Iteration: s.Iteration, MaxIterations: s.MaxIterations, Tokens: s.Tokens, CostUSD: s.CostUSD, CreatedAt: s.CreatedAt,
			UpdatedAt: s.UpdatedAt, LastSeq: s.LastSeq, Workspace: s.Workspace, Labels: s.Labels}
		if f := s.ForkedFrom; f != nil {
			out[i].ForkedFrom = &loop.ForkedFrom{ID: f.ID, Iteration: f.Iteration}
		}
	}
	return out
}

func absScript(path string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return "script:" + wd + "/" + path, nil
}

// followRemote shows a remote session's events after seq after until it
// stops, then its outcome. Ctrl-C asks the server to pause it. quiet
// (--quiet) shows no progress, as for a local run.
func followRemote(c *client.Client, id string, after int64, maxIter int, jsonOut, quiet bool, stdout, stderr io.Writer) int {
	progress := newProgress(stderr, isTerminal(os.Stderr), maxIter)
	progress.quiet = quiet
	ictx, stop := interruptContext(stderr)
	defer stop()
	go func() {
		<-ictx.Done()
		if _, err := c.Control(context.Background(), id, "pause", api.Control{Reason: "interrupted"}); err == nil {
			fmt.Fprintln(stderr, "asked the server to pause the session")
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for ev, err := range c.Events(ctx, id, after) {
		if err != nil {
			return fail(stderr, "%v", err)
		}
		e, err := loop.DecodeEvent(ev.SessionID, ev.Seq, loop.EventType(ev.Type), ev.Version, ev.Time, ev.Data)
		if err != nil {
			return fail(stderr, "event %d of session %s: %v (is this agentloop older than the server's?)", ev.Seq, id, err)
		}
		progress.event(e)
		if t := e.Type; t == loop.TypeSessionEnded || t == loop.TypeSessionPaused || t == loop.TypeSessionWaiting {
			break
		}
	}
	progress.done()
	st, err := stateOf(context.Background(), c, id)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	return report(st, remoteEnv(c.Base), stdout, stderr, jsonOut)
}

// sessionsRemote runs a sessions subcommand against a server.
func sessionsRemote(url, sub string, args []string, stdout, stderr io.Writer) int {
	c := remote(url)
	fs := flag.NewFlagSet("sessions "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	serverFlag(fs)
	fs.String("db", "", "ignored with --server: the server has its database")
	jsonOut := fs.Bool("json", false, "print JSON")
	status := fs.String("status", "", "only sessions with this status")
	limit := fs.Int("limit", 50, "at most this many sessions")
	forkedFrom := fs.String("forked-from", "", "only the sessions forked from this session (list)")
	unfinished := fs.Bool("unfinished", false, "only sessions that have not ended (list)")
	var labels labelFlags
	fs.Var(&labels, "label", "only sessions with this KEY=VALUE label (list; repeatable: all of them)")
	events := fs.Bool("events", false, "print the raw event log as JSON lines")
	argsJSON := fs.String("args", "", "replace the call's arguments with this JSON (approve)")
	forSession := fs.Bool("for-session", false, "allow this exact call for the rest of the session (approve)")
	followTask := fs.String("task", "", "the follow-up's task (follow-up; default: what the ended session left)")
	followModel := fs.String("model", "", "the follow-up's model (follow-up; default: the ended session's)")
	rewindAt := fs.Int("at", 0, "the step whose end the session goes back to (rewind)")
	rewindMessage := fs.String("message", "", "a message the model reads after that step; the session is resumed with it (rewind)")
	dryRun := fs.Bool("dry-run", false, "only say which files the rewind would change (rewind)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	ctx := context.Background()
	rest := fs.Args()
	need := map[string]int{"rewind": 1, "revoke": 2, "follow-up": 1, "show": 1, "resume": 1, "reply": 2, "pause": 1, "terminate": 1, "delete": 1, "approve": 3, "deny": 3}
	if n, ok := need[sub]; ok && len(rest) < n {
		fmt.Fprintf(stderr, "agentloop sessions %s: missing arguments (see agentloop sessions -h)\n", sub)
		return exitUsage
	}
	var res api.ControlResult
	var err error
	var before int64 // the log's end before a control that resumes the session
	if sub == "resume" || sub == "reply" || sub == "approve" || sub == "deny" || sub == "rewind" {
		st, err := stateOf(ctx, c, rest[0])
		if err != nil {
			return fail(stderr, "%v", err)
		}
		before = st.Seq
	}
	switch sub {
	case "list":
		// The same filters as the local list, all of them at once.
		f := client.Filter{Limit: *limit, ForkedFrom: *forkedFrom, Labels: labels, Unfinished: *unfinished}
		if *status != "" {
			st, err := loop.ParseStatus(*status)
			if err != nil {
				fmt.Fprintf(stderr, "agentloop sessions list: %v\n", err)
				return exitUsage
			}
			f.Status = []string{string(st)}
		}
		list, err := c.Sessions(ctx, f)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		if noForks(f.ForkedFrom, len(list), *jsonOut, stderr) {
			return 0
		}
		return printList(summariesOf(list), *jsonOut, stdout, stderr)
	case "show":
		if *events {
			var after int64
			enc := json.NewEncoder(stdout)
			for {
				page, err := c.EventsPage(ctx, rest[0], after, 1000)
				if err != nil {
					return fail(stderr, "%v", err)
				}
				for _, e := range page.Events {
					enc.Encode(e)
				}
				if len(page.Events) < 1000 {
					return 0
				}
				after = page.Next
			}
		}
		st, err := stateOf(ctx, c, rest[0])
		if err != nil {
			return fail(stderr, "%v", err)
		}
		if *jsonOut {
			return printJSON(stdout, withExitCode(st))
		}
		showState(safeWriter{stdout}, st)
		return 0
	case "approvals":
		ids := rest
		if len(ids) == 0 {
			list, err := c.List(ctx, "waiting", 500)
			if err != nil {
				return fail(stderr, "%v", err)
			}
			for _, s := range list {
				ids = append(ids, s.ID)
			}
		}
		var states []*loop.State
		for _, id := range ids {
			st, err := stateOf(ctx, c, id)
			if err != nil {
				return fail(stderr, "%v", err)
			}
			states = append(states, st)
		}
		return printApprovals(states, remoteEnv(url).again, *jsonOut, stdout, stderr)
	case "revoke":
		res, err = c.Revoke(ctx, rest[0], rest[1], strings.Join(rest[2:], " "))
		if err == nil && !*jsonOut {
			fmt.Fprintf(stdout, "session %s: %s\n", rest[0], res.Outcome)
			return 0
		}
		// With --json, it goes on below: the state the revoke leaves, as
		// a local revoke prints it.
	case "follow-up":
		created, err := c.FollowUp(ctx, rest[0], api.StartRequest{Task: *followTask, Model: *followModel})
		if err != nil {
			return fail(stderr, "%v", err)
		}
		fmt.Fprintf(stderr, "Follow-up of %s: session %s\n", rest[0], created.ID)
		return followRemote(c, created.ID, 0, 0, *jsonOut, false, stdout, stderr)
	case "rewind":
		if *rewindAt < 1 {
			fmt.Fprintln(stderr, "agentloop sessions rewind: usage: agentloop sessions rewind ID --at K [--message TEXT] [--dry-run] [--json]")
			return exitUsage
		}
		rw, err := c.Rewind(ctx, rest[0], api.RewindRequest{At: *rewindAt, Message: *rewindMessage, DryRun: *dryRun})
		if err != nil {
			return fail(stderr, "%v", err)
		}
		if *jsonOut && !rw.Resumed {
			return printJSON(stdout, rw)
		}
		w := stdout
		if *jsonOut {
			w = stderr
		}
		describeRewind(w, rw, *dryRun)
		if !rw.Resumed {
			if !*dryRun {
				fmt.Fprintf(w, "It is paused: resume it with agentloop sessions resume %s, or give it a message with agentloop sessions reply %s \"…\"\n", rest[0], rest[0])
			}
			return 0
		}
		return followRemote(c, rest[0], before, 0, *jsonOut, false, stdout, stderr)
	case "delete":
		if err := c.Delete(ctx, rest[0]); err != nil {
			return fail(stderr, "%v", err)
		}
		return printDeleted(rest[0], *jsonOut, stdout)
	case "pause", "terminate":
		res, err = c.Control(ctx, rest[0], sub, api.Control{Reason: strings.Join(rest[1:], " ")})
		if err != nil {
			return fail(stderr, "%v", err)
		}
		return printOutcome(controlOutcome{ID: rest[0], Outcome: res.Outcome, Status: res.Status}, *jsonOut, stdout)
	case "resume":
		res, err = c.Control(ctx, rest[0], "resume", api.Control{Note: strings.Join(rest[1:], " ")})
	case "reply":
		res, err = c.Control(ctx, rest[0], "reply", api.Control{Text: strings.Join(rest[1:], " ")})
	case "approve", "deny":
		yes := sub == "approve"
		d := api.Decision{Approve: &yes, ArgsHash: rest[2], Reason: strings.Join(rest[3:], " "), ForSession: yes && *forSession}
		if *argsJSON != "" {
			if !json.Valid([]byte(*argsJSON)) {
				return fail(stderr, "--args is not valid JSON: %s", *argsJSON)
			}
			d.Arguments = json.RawMessage(*argsJSON)
		}
		res, err = c.Decide(ctx, rest[0], rest[1], d)
	default:
		fmt.Fprintf(stderr, "agentloop sessions %s: not available with --server\n", sub)
		return exitUsage
	}
	if err != nil {
		var ce *client.Error
		if errors.As(err, &ce) {
			return fail(stderr, "%v", ce)
		}
		return fail(stderr, "%v", err)
	}
	st, err := stateOf(ctx, c, rest[0])
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if loop.Status(res.Status) == loop.StatusRunning || st.Status == loop.StatusRunning {
		// It runs on the server: follow it from where it was.
		return followRemote(c, rest[0], before, 0, *jsonOut, false, stdout, stderr)
	}
	return report(st, remoteEnv(url), stdout, stderr, *jsonOut)
}

// serverIn finds --server in args (or $AGENTLOOP_SERVER) without parsing
// the rest, so a command can switch to the server before its own flags.
func serverIn(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--server="); ok {
			return v
		}
		if v, ok := strings.CutPrefix(a, "-server="); ok {
			return v
		}
		if (a == "--server" || a == "-server") && i+1 < len(args) {
			return args[i+1]
		}
	}
	return os.Getenv("AGENTLOOP_SERVER")
}
