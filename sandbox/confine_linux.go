package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

var errNoBwrap = errors.New("bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or use --sandbox landlock")

// Confine makes cmd (not started yet) run under p. It is called by the
// command supervisor, a process that starts cmd and does nothing else
// afterwards but wait and signal: the resource limits, no_new_privs and
// (with landlock) the Landlock rules are applied to the supervisor itself
// and inherited by cmd; the uid/gid drop happens in cmd's own process
// between fork and exec; bwrap replaces cmd's program with bubblewrap
// running it.
func (p Policy) Confine(cmd *exec.Cmd) error {
	if !p.Confined() {
		return nil
	}
	p = p.WithDefaults()
	cmd.Env = p.Environ(cmd.Env)
	if err := closeInheritedOnExec(); err != nil {
		return err
	}
	if err := p.Limits.apply(); err != nil {
		return err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if os.Geteuid() == 0 {
		// Invariant: a sandboxed command never runs as root.
		if p.UID == 0 || p.GID == 0 {
			return fmt.Errorf("the sandbox user is root; give an unprivileged uid/gid")
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(p.UID), Gid: uint32(p.GID), Groups: []uint32{}}
	}
	switch p.Backend {
	case Landlock:
		return landlockRestrict(p)
	case Bwrap:
		bwrap, err := bwrapPath()
		if err != nil {
			return err
		}
		if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
		}
		if !p.Network.Full && !p.Network.None() {
			if err := landlockNetOnly(p); err != nil {
				return err
			}
		}
		argv := bwrapArgs(bwrap, p, cmd.Dir, cmd.Args)
		cmd.Path, cmd.Args = bwrap, argv
		return nil
	}
	return fmt.Errorf("unknown sandbox backend %q", p.Backend)
}

// closeInheritedOnExec marks every descriptor above stderr of this
// process close-on-exec, so the command gets only its stdin, stdout,
// stderr and cmd.ExtraFiles (which exec duplicates for it). Descriptors
// agentloop inherited without close-on-exec (a service manager's
// listening socket, a parent's pipe) would otherwise reach the command,
// and neither Landlock nor bwrap restricts a descriptor already open.
func closeInheritedOnExec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if err != unix.ENOSYS && err != unix.EINVAL { // before Linux 5.11: one by one
		return fmt.Errorf("close_range: %v", err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing this process's descriptors: %v", err)
	}
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd) // the directory's own descriptor is gone: EBADF
		}
	}
	return nil
}

// apply sets the limits on this process (its children inherit them).
func (l Limits) apply() error {
	const mb = 1 << 20
	for _, r := range []struct {
		name     string
		resource int
		value    uint64
	}{
		{"CPU seconds", unix.RLIMIT_CPU, l.CPUSeconds},
		{"address space", unix.RLIMIT_AS, l.AddressSpaceMB * mb},
		{"processes", unix.RLIMIT_NPROC, l.Processes},
		{"file size", unix.RLIMIT_FSIZE, l.FileSizeMB * mb},
		{"open files", unix.RLIMIT_NOFILE, l.OpenFiles},
	} {
		if err := unix.Setrlimit(r.resource, &unix.Rlimit{Cur: r.value, Max: r.value}); err != nil {
			return fmt.Errorf("setting the %s limit to %d: %v", r.name, r.value, err)
		}
	}
	return nil
}

// SetNotDumpable makes this process non-dumpable: a process of the same
// user can then neither read its /proc/PID/mem or environ nor ptrace it
// (API keys live in agentloop's memory and environment).
func SetNotDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
