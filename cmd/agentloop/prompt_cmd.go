package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/model/tokens"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/workspace"
)

// cmdPrompt prints the system prompt a session in --dir would get.
func cmdPrompt(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("prompt", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var o sessionFlags
	o.register(fset)
	count := fset.Bool("tokens", false, "print the token count (cl100k and o200k) instead of the prompt")
	if code, ok := parseFlags(fset, args); !ok {
		return code
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	env := &cliEnv{dir: dir}
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "agentloop prompt: %v\n", err)
		return exitUsage
	}
	o.task = strings.Join(fset.Args(), " ")
	var tools []tool.Tool
	if o.offersTools(nil) {
		ws, err := workspace.New(dir)
		if err != nil {
			return fail(stderr, "workspace %s: %v", dir, err)
		}
		tools = append(fs.Tools(ws), extraTools(ws)...)
	}
	if env.registry, err = tool.NewRegistry(tools...); err != nil {
		return fail(stderr, "%v", err)
	}
	text, err := o.systemPrompt(env, nil)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if *count {
		fmt.Fprintf(stdout, "%d tokens (cl100k_base), %d tokens (o200k_base), %d tools\n",
			tokens.Count(tokens.CL100K, text), tokens.Count(tokens.O200K, text), len(tools))
		return 0
	}
	fmt.Fprintln(stdout, text)
	return 0
}
