package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/toolcall"
)

// cmdParseToolCalls reads model text on stdin and prints what the tool-call
// parser recovers: a debugging aid for local models and a stable surface
// for tests.
func cmdParseToolCalls(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("parse-toolcalls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tools := fs.String("tools", "", "comma-separated tool names the model was offered; calls to other names stay text")
	toolsFile := fs.String("tools-file", "", "JSON file with the offered tools and their schemas, [{\"name\":…,\"parameters\":{…}}], which type untyped values (Qwen3-Coder, GLM) and pick the tool of a call that names none (Kimi K2 \"0\")")
	fs.Bool("json", true, "the output is JSON either way; accepted as on every command that prints data")
	callPrefix := fs.String("call-prefix", "", "the marker the model's chat template writes before a call (as Ollama reads it, e.g. \"<tool_call>\" or \"{\"): a bare JSON call after text is then text")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop parse-toolcalls [--tools a,b,c | --tools-file tools.json] [--call-prefix TAG] < model-output.txt")
		fmt.Fprintln(stderr, "\nPrints {\"calls\":[{\"name\":…,\"arguments\":{…}}],\"content\":…,\"format\":…}.\n\nFlags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	text, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fail(stderr, "reading stdin: %v", err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentloop: parse-toolcalls reads the model output on stdin and takes no arguments (got %q)\n", fs.Arg(0))
		return exitUsage
	}
	opts := toolcall.Options{CallPrefix: *callPrefix}
	if *toolsFile != "" {
		raw, err := os.ReadFile(*toolsFile)
		if err != nil {
			return fail(stderr, "reading --tools-file: %v", err)
		}
		if err := json.Unmarshal(raw, &opts.Tools); err != nil {
			return fail(stderr, "--tools-file %s is not a JSON list of tools: %v — write [{\"name\": \"read_file\", \"parameters\": {\"type\": \"object\", …}}]", *toolsFile, err)
		}
		for i, t := range opts.Tools {
			if strings.TrimSpace(t.Name) == "" {
				return fail(stderr, "--tools-file %s: tool %d has no name", *toolsFile, i+1)
			}
		}
	}
	for _, name := range strings.Split(*tools, ",") {
		if name = strings.TrimSpace(name); name != "" {
			opts.Tools = append(opts.Tools, model.ToolSpec{Name: name})
		}
	}
	res := toolcall.Parse(string(text), opts)
	out, err := res.MarshalJSON() // not json.Marshal: it would escape < and > again
	if err != nil {
		return fail(stderr, "%v", err)
	}
	fmt.Fprintln(stdout, string(out))
	if res.Attempted {
		fmt.Fprintf(stderr, "looks like a tool call that could not be read: %s\n", res.Problem)
	}
	return 0
}
