package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/agentloop/agentloop/sandbox"
)

// cmdDoctor reports which sandbox backends work on this machine, and the
// one sessions get by default. It exits 1 when the default cannot work.
func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: agentloop doctor [--json]   report which sandbox backends (--sandbox) work on this machine")
		fs.PrintDefaults()
	}
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	r := doctorReport()
	if *jsonOut {
		if code := printJSON(stdout, r); code != 0 {
			return code
		}
	} else {
		fmt.Fprintln(stdout, "sandbox backends (--sandbox):")
		for _, line := range sandbox.Report() {
			fmt.Fprintln(stdout, "  "+line)
		}
		if r.DefaultError != "" {
			fmt.Fprintf(stdout, "default: %s — does not work here: %s\n", r.Default, r.DefaultError)
		} else {
			fmt.Fprintf(stdout, "default: %s\n", r.Default)
		}
	}
	if r.DefaultError != "" {
		return exitFailed
	}
	return 0
}

// doctorBackend is one sandbox backend and whether it works here.
type doctorBackend struct {
	Name        string `json:"name"`
	Works       bool   `json:"works"`
	Error       string `json:"error,omitempty"`
	LandlockABI int    `json:"landlock_abi,omitempty"`
	// Unconfined is set for the backend that confines nothing (none):
	// it always works and is used only when named.
	Unconfined bool `json:"unconfined,omitempty"`
}

// doctorResult is what agentloop doctor finds.
type doctorResult struct {
	Backends []doctorBackend `json:"backends"`
	// Default is the backend sessions get without --sandbox;
	// DefaultError, when set, says why it does not work here.
	Default      string `json:"default"`
	DefaultError string `json:"default_error,omitempty"`
}

func doctorReport() doctorResult {
	var r doctorResult
	for _, b := range []sandbox.Backend{sandbox.Landlock, sandbox.Bwrap} {
		d := doctorBackend{Name: string(b)}
		if err := sandbox.Probe(b, sandbox.NoNetwork); err != nil {
			d.Error = err.Error()
		} else {
			d.Works = true
			if b == sandbox.Landlock {
				d.LandlockABI = sandbox.LandlockABI()
			}
		}
		r.Backends = append(r.Backends, d)
	}
	r.Backends = append(r.Backends, doctorBackend{Name: string(sandbox.None), Works: true, Unconfined: true})
	def := sandbox.DefaultBackend()
	r.Default = string(def)
	if err := sandbox.Probe(def, sandbox.NoNetwork); err != nil {
		r.DefaultError = err.Error()
	}
	return r
}
