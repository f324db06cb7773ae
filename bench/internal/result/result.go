// Package result keeps a benchmark's current result: one file per
// benchmark, bench/results/<name>.md, overwritten by each run and opening
// with when, at which commit and on what machine it was measured. Earlier
// results are in git's history of the file.
package result

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Path is the file of the named benchmark's result, under the repository
// root found above the working directory (or relative to it, when none is).
func Path(name string) string {
	return filepath.Join(Root(), "bench", "results", name+".md")
}

// Root is the agentloop repository root above the working directory, or
// "." when there is none.
func Root() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/agentloop/agentloop\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}

// Stamp is the line a result opens with: the date, the commit (marked when
// the code had uncommitted changes: results rewritten since are not
// changes to what was measured), Go, the platform, the CPUs and the load
// average.
func Stamp() string {
	commit := "unknown commit"
	if out, err := git("rev-parse", "--short", "HEAD"); err == nil {
		commit = "commit " + out
		if st, err := git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/results"); err == nil && st != "" {
			commit += " with uncommitted changes"
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = ", load average " + strings.Join(f[:3], " ")
		}
	}
	return fmt.Sprintf("Measured %s at %s; %s, %s/%s, %d CPUs (%s)%s.",
		time.Now().UTC().Format("2006-01-02"), commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), load)
}

func git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = Root()
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "CPU unknown"
}

// Create returns a writer to standard output and to the file out ("-":
// standard output only), with the title and the stamp written to both,
// and the function that closes the file.
func Create(out, title string) (io.Writer, func() error, error) {
	var w io.Writer = os.Stdout
	closeFn := func() error { return nil }
	if out != "-" {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return nil, nil, err
		}
		f, err := os.Create(out)
		if err != nil {
			return nil, nil, err
		}
		w, closeFn = io.MultiWriter(os.Stdout, f), f.Close
	}
	fmt.Fprintf(w, "# %s\n\n%s\n\n", title, Stamp())
	return w, closeFn, nil
}
