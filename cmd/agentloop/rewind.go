package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/service"
)

// sessionsRewind takes a stopped session back to the end of step --at,
// its workspace files included; with --dry-run it only says what that
// changes. A session it resumes runs here and is followed as run does.
func sessionsRewind(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions rewind", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o sessionFlags
	o.register(fs)
	at := fs.Int("at", 0, "the step whose end the session goes back to (required; from 1)")
	message := fs.String("message", "", "a message the model reads after that step; the session is resumed with it")
	dry := fs.Bool("dry-run", false, "only say which files the rewind would change and which steps it would set aside")
	jsonOut := fs.Bool("json", false, "print the rewind as JSON on stdout (once a resumed session stops: its state, as run --json)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	o.captureSet(fs)
	if fs.NArg() != 1 || *at < 1 {
		fmt.Fprintln(stderr, "agentloop sessions rewind: usage: agentloop sessions rewind ID --at K [--message TEXT] [--dry-run] [--json]")
		return exitUsage
	}
	id := fs.Arg(0)
	rec, code := o.openRecorded("rewind", id, stderr)
	if rec == nil {
		return code
	}
	defer rec.close()
	ctx, env, state := rec.ctx, rec.env, rec.state
	res, err := env.svc.Rewind(ctx, env.caller, id, service.RewindRequest{At: *at, Message: *message, DryRun: *dry})
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if *jsonOut && !res.Resumed {
		return printJSON(stdout, rewoundJSON(res))
	}
	w := stdout
	if *jsonOut {
		w = stderr
	}
	describeRewind(w, rewoundJSON(res), *dry)
	if !res.Resumed {
		if !*dry {
			fmt.Fprintf(w, "It is paused: resume it with agentloop sessions resume %s%s, or give it a message with agentloop sessions reply %s \"…\"%s\n", id, env.again, id, env.again)
		}
		return 0
	}
	return follow(ctx, env, res.Session, state.Seq, stdout, stderr, *jsonOut)
}

// rewoundJSON is the rewind as POST /v1/sessions/{id}/rewind answers it.
func rewoundJSON(res *service.Rewound) api.Rewound {
	out := api.Rewound{SessionID: res.ID, At: res.At, Files: make([]api.FileChange, len(res.Files)), RewoundSteps: res.Steps, Resumed: res.Resumed}
	for i, f := range res.Files {
		out.Files[i] = api.FileChange{Path: f.Path, Change: f.Change}
	}
	return out
}

// describeRewind says what a rewind did (or, dry, would do).
func describeRewind(w io.Writer, res api.Rewound, dry bool) {
	steps := "no later step is set aside"
	if n := len(res.RewoundSteps); n > 0 {
		steps = fmt.Sprintf("step %d is set aside", res.RewoundSteps[0])
		if n > 1 {
			steps = fmt.Sprintf("steps %s are set aside", joinSteps(res.RewoundSteps))
		}
	}
	files := "no file changes"
	if n := len(res.Files); n == 1 {
		files = "1 file changes"
	} else if n > 1 {
		files = fmt.Sprintf("%d files change", n)
	}
	if dry {
		fmt.Fprintf(w, "Rewinding session %s to the end of step %d (dry run: nothing changed): %s, %s\n", res.SessionID, res.At, steps, files)
	} else {
		fmt.Fprintf(w, "Session %s rewound to the end of step %d: %s, %s\n", res.SessionID, res.At, steps, files)
	}
	what := map[string]string{"added": "comes back", "modified": "as it was then", "deleted": "goes away"}
	if !dry {
		what = map[string]string{"added": "brought back", "modified": "restored", "deleted": "removed"}
	}
	for _, f := range res.Files {
		fmt.Fprintf(w, "  %-9s %s (%s)\n", f.Change, safeText(f.Path), what[f.Change])
	}
}

// joinSteps writes step numbers, runs of consecutive ones as a range.
func joinSteps(steps []int) string {
	var parts []string
	for i := 0; i < len(steps); {
		j := i
		for j+1 < len(steps) && steps[j+1] == steps[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", steps[i], steps[j]))
		} else {
			parts = append(parts, fmt.Sprint(steps[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
