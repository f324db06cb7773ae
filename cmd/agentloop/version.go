package main

import (
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
func cmdVersion(_ []string, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, versionLine())
	return 0
}

func versionLine() string {
	v := version
	var extra []string
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			c := "commit " + rev[:min(12, len(rev))]
			if settings["vcs.modified"] == "true" {
				c += "+changes"
			}
			extra = append(extra, c)
		}
		if t := settings["vcs.time"]; t != "" {
			extra = append(extra, t)
		}
	}
	extra = append(extra, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
	return "agentloop " + v + " (" + strings.Join(extra, ", ") + ")"
}
