package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/service"
)

// sessionsFork starts a new session from a stored one's log up to the end
// of step --at, in a new workspace holding that step's files, and follows
// it like run does.
func sessionsFork(args []string, stdout, stderr io.Writer) int {
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
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "agentloop sessions fork: %v\n", err)
		return exitUsage
	}
	id := fs.Arg(0)
	state, _, err := loadState(o.db, id)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	req := service.ForkRequest{At: *at, Message: *message}
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
	ctx, stop := interruptContext(stderr)
	defer stop()
	env, err := o.open(ctx, stderr, state)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer env.Close()
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
