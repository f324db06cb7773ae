package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// cmdVersion prints the version, and what the build recorded: the
// module version, the VCS revision and time (and whether the tree had
// uncommitted changes), the Go version and the platform.
func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print the version and build information as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentloop version: unexpected %q (usage: agentloop version [--json])\n", fs.Arg(0))
		return exitUsage
	}
	info := buildInfo()
	if *jsonOut {
		return printJSON(stdout, info)
	}
	fmt.Fprintln(stdout, info.line())
	return 0
}

// versionInfo is what the build recorded about this binary.
type versionInfo struct {
	Version string `json:"version"`
	// Revision is the VCS commit; Modified says the tree had
	// uncommitted changes; Time is the commit's time (RFC 3339).
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Time     string `json:"time,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func buildInfo() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			case "vcs.time":
				v.Time = s.Value
			}
		}
	}
	return v
}

func (v versionInfo) line() string {
	var extra []string
	if v.Revision != "" {
		c := "commit " + v.Revision[:min(12, len(v.Revision))]
		if v.Modified {
			c += "+changes"
		}
		extra = append(extra, c)
	}
	if v.Time != "" {
		extra = append(extra, v.Time)
	}
	extra = append(extra, v.Go, v.Platform)
	return "agentloop " + v.Version + " (" + strings.Join(extra, ", ") + ")"
}
