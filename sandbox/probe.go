package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
)

// Probe says whether backend can confine commands on this machine (for
// network policy n), and if not, what to do. None always works.
func Probe(backend Backend, n Network) error {
	if backend == None {
		return nil
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the %s sandbox works only on Linux; on %s run with --sandbox none (unconfined) or inside a container or VM", backend, runtime.GOOS)
	}
	switch backend {
	case Landlock:
		_, err := landlockConfig(Policy{Network: n}, LandlockABI())
		return err
	case Bwrap:
		return probeBwrap(n)
	}
	return fmt.Errorf("unknown sandbox %q: use landlock, bwrap or none", backend)
}

// probeBwrap runs true under bubblewrap the way Confine would (as the
// sandbox user when root).
func probeBwrap(n Network) error {
	bwrap, err := bwrapPath()
	if err != nil {
		return err
	}
	p := Policy{Backend: Bwrap, Network: NoNetwork}.WithDefaults()
	cmd := exec.Command(bwrap, bwrapArgs(bwrap, p, "/", []string{"/bin/true"})[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: Nobody, Gid: Nobody, Groups: []uint32{}}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bubblewrap cannot create its namespaces here (%v: %s): allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, and on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or in a container run it with --security-opt seccomp=unconfined; or use --sandbox landlock",
			err, strings.TrimSpace(stderr.String()))
	}
	if !n.Full && !n.None() && LandlockABI() < abiNetwork {
		return fmt.Errorf("a port list with bwrap needs Landlock ABI %d (Linux 6.7+) for the ports; this kernel has %d: use --network none or full", abiNetwork, LandlockABI())
	}
	return nil
}

// Report describes every backend on this machine, one line each, for
// agentloop doctor.
func Report() []string {
	var lines []string
	for _, b := range []Backend{Landlock, Bwrap} {
		if err := Probe(b, NoNetwork); err != nil {
			lines = append(lines, fmt.Sprintf("%-8s no: %v", b, err))
			continue
		}
		extra := ""
		if b == Landlock {
			extra = fmt.Sprintf(" (Landlock ABI %d)", LandlockABI())
		}
		lines = append(lines, fmt.Sprintf("%-8s works%s", b, extra))
	}
	return append(lines, fmt.Sprintf("%-8s always (unconfined; explicit only)", None))
}
