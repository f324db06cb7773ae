package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/client"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
)

// sessionsFork starts a new session from a stored one's log up to the end
// of step --at, in a new workspace holding that step's files, and follows
// it like run does.
func sessionsFork(args []string, stdout, stderr io.Writer) int {
	if url := serverIn(args); url != "" {
		return forkRemote(url, args, stdout, stderr)
	}
	fs := flag.NewFlagSet("sessions fork", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o sessionFlags
	o.register(fs)
	at := fs.Int("at", 0, "the step whose end the fork starts from (required; from 1)")
	message := fs.String("message", "", "a message the fork's model reads after that step")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	o.captureSet(fs)
	if fs.NArg() != 1 || *at < 1 {
		fmt.Fprintln(stderr, "agentloop sessions fork: usage: agentloop sessions fork ID --at K [--model M] [--message TEXT] [--dir NEWDIR]")
		return exitUsage
	}
	id := fs.Arg(0)
	req := service.ForkRequest{At: *at, Message: *message}
	var err error
	if o.set["model"] {
		if req.Model, err = assemble.ModelSpec(o.model); err != nil {
			fmt.Fprintf(stderr, "agentloop sessions fork: --model: %v\n", err)
			return exitUsage
		}
	}
	if o.set["dir"] {
		if req.Workspace, err = filepath.Abs(o.dir); err != nil {
			return fail(stderr, "%v", err)
		}
	}
	rec, code := o.openRecorded("fork", id, stderr)
	if rec == nil {
		return code
	}
	defer rec.close()
	ctx, env := rec.ctx, rec.env
	started, err := env.svc.Fork(ctx, env.caller, id, req)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	fmt.Fprintf(stderr, "session %s: forked from %s at step %d\n", started.ID, id, *at)
	fst, err := env.svc.Get(ctx, env.caller, started.ID)
	after := int64(0)
	if err == nil {
		after = fst.Seq
	}
	return follow(ctx, env, started.Session, after, stdout, stderr, false)
}

// forkRemote forks a session on an agentloop server and follows the fork
// from the first event after the copied steps.
func forkRemote(url string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions fork", flag.ContinueOnError)
	fs.SetOutput(stderr)
	serverFlag(fs)
	fs.String("db", "", "ignored with --server: the server has its database")
	at := fs.Int("at", 0, "the step whose end the fork starts from (required; from 1)")
	modelSpec := fs.String("model", "", "the model the fork runs with from there (default the original's)")
	message := fs.String("message", "", "a message the fork's model reads after that step")
	jsonOut := fs.Bool("json", false, "print the fork's state as JSON once it stops")
	quiet := fs.Bool("quiet", false, "print only the answer")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 || *at < 1 {
		fmt.Fprintln(stderr, "agentloop sessions fork: usage: agentloop sessions fork ID --at K [--model M] [--message TEXT] --server URL (--dir is the server's choice)")
		return exitUsage
	}
	id := fs.Arg(0)
	c := remote(url)
	ctx := context.Background()
	req := api.ForkRequest{At: *at, Model: *modelSpec, Message: *message}
	if path, ok := strings.CutPrefix(req.Model, "script:"); ok && !strings.HasPrefix(path, "/") {
		if spec, err := absScript(path); err == nil {
			req.Model = spec // the server reads it from its own directory
		}
	}
	// The server checks the step (and says which ones a fork can start
	// from) before anything is copied.
	created, err := c.Fork(ctx, id, req)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	fmt.Fprintf(stderr, "session %s: forked from %s at step %d\n", created.ID, id, *at)
	// The fork's log is the original's up to step K's end: the first event
	// after that is the first the fork itself records.
	copied, err := copiedSeq(ctx, c, id, *at)
	if err != nil {
		// The fork exists and runs on the server: follow it all, the
		// steps it copied too.
		fmt.Fprintf(stderr, "agentloop sessions fork: could not tell which of the fork's events were copied (%v); showing them all\n", err)
		copied = 0
	}
	return followRemote(c, created.ID, copied, 0, *jsonOut, *quiet, stdout, stderr)
}

// copiedSeq is the sequence number of the last event a fork of session id
// at step at copies (loop.LiveStepEnd over the session's log).
func copiedSeq(ctx context.Context, c *client.Client, id string, at int) (int64, error) {
	var events []loop.Event
	var after int64
	for {
		page, err := c.EventsPage(ctx, id, after, 1000)
		if err != nil {
			return 0, err
		}
		for _, e := range page.Events {
			ev, err := loop.DecodeEvent(id, e.Seq, loop.EventType(e.Type), e.Version, e.Time, e.Data)
			if err != nil {
				return 0, fmt.Errorf("session %s: %w", id, err)
			}
			events = append(events, ev)
		}
		if len(page.Events) < 1000 {
			break
		}
		after = page.Next
	}
	end, ok := loop.LiveStepEnd(events, at)
	if !ok {
		return 0, fmt.Errorf("session %s has no finished step %d to fork at", id, at)
	}
	return events[end-1].Seq, nil
}
