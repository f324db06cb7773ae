package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/agentloop/agentloop/loop"
)

// sessionsFollowUp starts a session that finishes what an ended one left
// (its plan's unfinished steps, its failing checks) in the same
// workspace, as `agentloop run` would, with the model, checks and
// approval of the ended session unless flags say otherwise.
func sessionsFollowUp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions follow-up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o sessionFlags
	o.register(fs)
	task := fs.String("task", "", "the follow-up's task (default: the ended session's unfinished steps and failing checks)")
	jsonOut := fs.Bool("json", false, "print the final session state as JSON on stdout")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop sessions follow-up ID [flags]")
		fmt.Fprintln(stderr, "\nStarts a session that finishes what session ID left: its plan's unfinished steps and the")
		fmt.Fprintln(stderr, "verification checks that still fail, in the same workspace, with the same model and checks")
		fmt.Fprintln(stderr, "unless flags say otherwise. The new session is labelled follow_up_of=ID.\n\nFlags (as for run):")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "agentloop sessions follow-up: give the id of the ended session, e.g. agentloop sessions follow-up 3f2a…")
		return exitUsage
	}
	id := fs.Arg(0)
	st, _, err := loadState(o.db, id)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	followUp, ok := st.FollowUp()
	switch {
	case !ok && !st.Status.Finished():
		return fail(stderr, "session %s is %s: a follow-up starts after it ends", id, st.Status)
	case !ok && *task == "":
		return fail(stderr, "session %s left nothing to follow up (its verification passed or did not run); give the follow-up's task with --task", id)
	case *task != "":
		followUp = *task
	}
	// The follow-up is a run: the ended session's settings first, then
	// every flag given here, which wins.
	runArgs := []string{"--dir", st.Workspace, "--model", st.Model}
	for _, v := range st.Verify {
		runArgs = append(runArgs, "--verify", v)
	}
	if st.Approval == "auto" {
		runArgs = append(runArgs, "--yes")
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "task" {
			return
		}
		given[f.Name] = true
		if list, ok := f.Value.(*stringList); ok {
			for _, v := range *list {
				runArgs = append(runArgs, "--"+f.Name+"="+v)
			}
			return
		}
		if labels, ok := f.Value.(*labelFlags); ok {
			for k, v := range *labels {
				runArgs = append(runArgs, "--label="+k+"="+v)
			}
			return
		}
		runArgs = append(runArgs, "--"+f.Name+"="+f.Value.String())
	})
	if given["verify"] {
		runArgs = dropFlag(runArgs, "--verify")
	}
	if !given["db"] {
		runArgs = append(runArgs, "--db", o.db)
	}
	if *jsonOut {
		runArgs = append(runArgs, "--json")
	}
	runArgs = append(runArgs, "--label", loop.FollowUpLabel+"="+id, "--", followUp)
	if !o.quiet && !*jsonOut {
		fmt.Fprintf(stderr, "Follow-up of %s: %s\n", id, followUp)
	}
	return cmdRun(runArgs, stdout, stderr)
}

// dropFlag removes the leading "NAME VALUE" pairs of one flag from args
// (the ended session's, overridden by the same flag given here).
func dropFlag(args []string, name string) []string {
	var kept []string
	for i := 0; i < len(args); i++ {
		if args[i] == name && i+1 < len(args) {
			i++
			continue
		}
		kept = append(kept, args[i])
	}
	return kept
}
