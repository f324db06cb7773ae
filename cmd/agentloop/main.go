// Command agentloop runs agent sessions from the terminal: start one with
// `agentloop run`, inspect and control them with `agentloop sessions`.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/tool/shell"
)

// Exit codes. Scripts can tell how a session ended without parsing output.
const (
	exitCompleted  = 0
	exitFailed     = 1 // the session failed, or the command could not run
	exitUsage      = 2
	exitLimit      = 3 // a limit (iterations, time, budget, stuck…) ended it
	exitPaused     = 4 // paused or waiting for a person; resume it later
	exitTerminated = 5
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"run", "start a session: agentloop run [flags] \"task\"", cmdRun},
		{"sessions", "list, show, resume, reply to, approve or terminate sessions", cmdSessions},
		{"serve", "serve the HTTP API: sessions, live event streams, controls (agentloop serve --addr 127.0.0.1:7420)", cmdServe},
		{"mcp", "serve the sessions to an MCP client on stdin/stdout: agentloop mcp --dir PROJECT; agentloop mcp login NAME logs in to a remote MCP server (OAuth)", cmdMCP},
		{"keys", "API keys for the server: agentloop keys create --tenant T --role operator; keys list; keys revoke ID", cmdKeys},
		{"db", "the session database: agentloop db migrate [--db postgres://…] brings its schema up to date", cmdDB},
		{"worker", "run sessions on Temporal: agentloop worker --temporal HOST:PORT [--db …]", cmdWorker},
		{"eval", "compare models on a suite of tasks: agentloop eval SUITE.yaml --model A --model B [--runs 3]", cmdEval},
		{"parse-toolcalls", "read model text on stdin and print the tool calls found in it", cmdParseToolCalls},
		{"config", "check the config file: agentloop config check [FILE]", cmdConfig},
		{"doctor", "report what works on this machine: the sandbox backends", cmdDoctor},
		{"prompt", "print the default system prompt (--tokens: its token count)", cmdPrompt},
		{"version", "print the version", cmdVersion},
		{"completion", "print a shell completion script: agentloop completion bash|zsh|fish", cmdCompletion},
	}
}

func main() {
	shell.Supervise() // in a command's supervisor: runs it and exits
	hideSecrets()
	// Non-dumpable after the last exec (an exec makes a process dumpable
	// again): a process of the same user, such as a command the agent
	// runs, cannot read this one's memory or environment through /proc
	// or ptrace it. The keys are in there.
	_ = sandbox.SetNotDumpable()
	os.Exit(mainArgs(os.Args[1:], os.Stdout, os.Stderr))
}

func mainArgs(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || (args[0] == "help" && len(args) == 1) {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	if args[0] == "__complete" { // asked by the completion scripts
		return cmdComplete(args[1:], stdout, stderr)
	}
	if args[0] == "--version" || args[0] == "-version" { // --version --json too
		return cmdVersion(args[1:], stdout, stderr)
	}
	if args[0] == "help" && len(args) > 1 { // help run: run's own help
		return mainArgs([]string{args[1], "-h"}, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "agentloop: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "agentloop drives a language model through a task with tools, recording every step.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: agentloop <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-16s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'agentloop <command> -h' for a command's flags.")
	fmt.Fprintln(w, "Exit codes: 0 completed, 1 failed, 2 usage, 3 limit reached, 4 paused/waiting, 5 terminated.")
}

// parseFlags parses and turns -h into exit 0 and bad flags into exit 2.
// parseFlags parses flags anywhere on the line, as gh and kubectl do:
// `agentloop run "say hi" --model m` sets the model (the standard flag
// package stops at the first argument that is not a flag, and the flag
// would have become part of the task). A "--" ends the flags: what
// follows is taken as it is. fs.Args() is then the arguments in order.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0, false
			}
			return exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	fs.Parse(append([]string{"--"}, positional...)) // fs.Args() = the positional arguments
	return 0, true
}

func fail(w io.Writer, format string, args ...any) int {
	fmt.Fprintf(w, "agentloop: "+format+"\n", args...)
	return exitFailed
}
