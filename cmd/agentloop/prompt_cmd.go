package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/tokens"
)

// cmdPrompt prints the system prompt a session in --dir would get.
func cmdPrompt(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("prompt", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var o sessionFlags
	o.register(fset)
	count := fset.Bool("tokens", false, "print the token count (cl100k and o200k) instead of the prompt")
	jsonOut := fset.Bool("json", false, `print {"prompt", "tools", "tokens": {"cl100k_base", "o200k_base"}} as JSON`)
	if code, ok := parseFlags(fset, args); !ok {
		return code
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "agentloop prompt: %v\n", err)
		return exitUsage
	}
	limits := o.limitsWith(true, nil)
	spec := &loop.SessionStarted{Task: strings.Join(fset.Args(), " "), Mode: o.loopMode(), Workspace: dir, Limits: limits, Marker: o.marker}
	r := &assemble.Resolver{PromptTemplate: o.promptFile}
	text, tools, err := r.Prompt(context.Background(), spec)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if *jsonOut {
		return printJSON(stdout, struct {
			Prompt string         `json:"prompt"`
			Tools  int            `json:"tools"`
			Tokens map[string]int `json:"tokens"`
		}{text, tools, map[string]int{"cl100k_base": tokens.Count(tokens.CL100K, text), "o200k_base": tokens.Count(tokens.O200K, text)}})
	}
	if *count {
		fmt.Fprintf(stdout, "%d tokens (cl100k_base), %d tokens (o200k_base), %d tools\n",
			tokens.Count(tokens.CL100K, text), tokens.Count(tokens.O200K, text), tools)
		return 0
	}
	fmt.Fprintln(stdout, text)
	return 0
}
