package main

import (
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
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop parse-toolcalls [--tools a,b,c] < model-output.txt")
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
	var opts toolcall.Options
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
