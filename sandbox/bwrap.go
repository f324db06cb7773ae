package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
)

// bwrapArgs is the bubblewrap command line that runs argv in dir under p:
// a new mount view with only the read-only directories, the workspace
// and the private directory in it (read-write), its own /proc in a new
// PID namespace, a private /tmp, no network namespace sharing when the
// policy is none, a new session (no terminal injection), and death with
// the supervisor.
func bwrapArgs(bwrap string, p Policy, dir string, argv []string) []string {
	args := []string{bwrap,
		"--die-with-parent", "--new-session",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		// No nested user namespaces: the kernel code behind them is the
		// commonest way out of a namespace sandbox (bubblewrap 0.8+; an
		// older one fails the start-up probe, never runs unconfined).
		"--disable-userns",
	}
	if p.Network.None() {
		args = append(args, "--unshare-net")
	}
	for _, d := range p.ReadOnly {
		args = append(args, "--ro-bind-try", d, d)
	}
	// Debian's /bin, /lib… are symlinks into /usr; bind keeps them as
	// they are (a bind of a symlink follows it, which is the same view).
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	// /tmp first: the private directory and the workspace may live
	// under it, and a later mount covers an earlier one.
	if tmp := filepath.Join(p.Private, "tmp"); p.Private != "" && isDir(tmp) {
		args = append(args, "--bind", tmp, "/tmp")
	} else {
		args = append(args, "--tmpfs", "/tmp")
	}
	for _, d := range writable(p) {
		args = append(args, "--bind", d, d)
	}
	if dir != "" {
		args = append(args, "--chdir", dir)
	}
	return append(append(args, "--"), argv...)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// bwrapPath is the bubblewrap binary, or an error that says how to get it.
func bwrapPath() (string, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errNoBwrap
	}
	return p, nil
}
