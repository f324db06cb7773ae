package main

import (
	"fmt"
	"io"

	"github.com/agentloop/agentloop/sandbox"
)

// cmdDoctor reports which sandbox backends work on this machine, and the
// one sessions get by default. It exits 1 when the default cannot work.
func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "Usage: agentloop doctor   report which sandbox backends (--sandbox) work on this machine")
		if args[0] == "-h" || args[0] == "--help" {
			return 0
		}
		return exitUsage
	}
	fmt.Fprintln(stdout, "sandbox backends (--sandbox):")
	for _, line := range sandbox.Report() {
		fmt.Fprintln(stdout, "  "+line)
	}
	def := sandbox.DefaultBackend()
	if err := sandbox.Probe(def, sandbox.NoNetwork); err != nil {
		fmt.Fprintf(stdout, "default: %s — does not work here: %v\n", def, err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "default: %s\n", def)
	return 0
}
