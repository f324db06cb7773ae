package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/tool/workspace"
)

// cmdConfig checks the config file: every mistake with its line.
func cmdConfig(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "check" && args[0] != "path") {
		fmt.Fprintln(stderr, "Usage: agentloop config check [--json] [FILE]   report every mistake in the config file, with its line\n       agentloop config path [--json]           print where the config file is read from\n\nThe format is documented in config/example.yaml.")
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	fset := flag.NewFlagSet("config "+args[0], flag.ContinueOnError)
	fset.SetOutput(stderr)
	jsonOut := fset.Bool("json", false, `print the result as JSON: {"path", "exists", "problems": [{"file", "line", "column", "message"}]}`)
	if code, ok := parseFlags(fset, args[1:]); !ok {
		return code
	}
	if args[0] == "path" {
		if fset.NArg() > 0 {
			fmt.Fprintf(stderr, "agentloop config path: unexpected %q (usage: agentloop config path [--json])\n", fset.Arg(0))
			return exitUsage
		}
		if *jsonOut {
			_, err := os.Stat(config.DefaultPath())
			return printJSON(stdout, configResult{Path: config.DefaultPath(), Exists: err == nil, Problems: []config.Problem{}})
		}
		fmt.Fprintln(stdout, config.DefaultPath())
		return 0
	}
	path := config.DefaultPath()
	if fset.NArg() > 0 {
		path = fset.Arg(0)
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) && fset.NArg() == 0 {
			// No config file is a valid setup: the built-in defaults apply.
			if *jsonOut {
				return printJSON(stdout, configResult{Path: path, Problems: []config.Problem{}})
			}
			fmt.Fprintf(stderr, "no config file at %s: the built-in defaults apply (every key is documented in config/example.yaml; --config or AGENTLOOP_CONFIG to use another file)\n", path)
			return 0
		}
		return fail(stderr, "config file %s: %v", path, err)
	}
	problems := config.Check(path, builtinToolNames())
	if *jsonOut {
		if code := printJSON(stdout, configResult{Path: path, Exists: true, Problems: append([]config.Problem{}, problems...)}); code != 0 {
			return code
		}
		if len(problems) > 0 {
			return exitFailed
		}
		return 0
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, p.String())
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "%d problem(s) in %s\n", len(problems), path)
		return exitFailed
	}
	fmt.Fprintf(stderr, "%s: ok\n", path)
	return 0
}

// configResult is config check's and config path's --json: the file,
// whether it exists and its problems (config path checks none).
type configResult struct {
	Path     string           `json:"path"`
	Exists   bool             `json:"exists"`
	Problems []config.Problem `json:"problems"`
}

// builtinToolNames lists the tools a session can have.
func builtinToolNames() []string {
	dir, err := os.MkdirTemp("", "agentloop-tools")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(dir)
	ws, err := workspace.New(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, t := range assemble.Builtin(ws) {
		names = append(names, t.Spec().Name)
	}
	return names
}
