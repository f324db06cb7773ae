package shell

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/sandbox"
)

// Commands die with their owner. When the program calls Supervise first
// thing in main, the shell tool starts each command through the program
// itself, as a supervisor that leads the command's process group: the
// kernel sends the supervisor SIGTERM when the process that started it
// dies (however it dies, SIGKILL included), and the supervisor then kills
// the whole group. Without Supervise, commands run as before and can
// outlive a crash of the program.

// superviseArg, as the first argument, makes the program a supervisor.
const superviseArg = "__agentloop_supervise"

// supervisor is the program to start commands through ("" when Supervise
// was not called, or the program cannot be found).
var supervisor string

// Supervise makes commands die with this program. Call it first in main:
// in a process started as a supervisor it runs the command and exits;
// otherwise it returns at once.
func Supervise() {
	if len(os.Args) >= 4 && os.Args[1] == superviseArg {
		os.Exit(supervise(os.Args[2], os.Args[3:]))
	}
	if exe, err := os.Executable(); err == nil {
		supervisor = exe
	}
}

// supervise runs argv in this process's group (which it leads) and exits
// as it did. parent is the process that started it: a SIGTERM while the
// parent lives is the shell tool ending the group, which the command gets
// too; once the parent is gone, the supervisor kills the group.
func supervise(parent string, argv []string) int {
	ppid, _ := strconv.Atoi(parent)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	orphaned := func() bool { return os.Getppid() != ppid }
	if orphaned() { // the parent died before Pdeathsig was in place
		syscall.Kill(0, syscall.SIGKILL)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if enc, ok := os.LookupEnv(sandbox.EnvVar); ok {
		// The policy confines this process and the command; a policy that
		// cannot be applied stops the command (never runs it unconfined).
		os.Unsetenv(sandbox.EnvVar)
		cmd.Env = os.Environ()
		p, err := sandbox.Decode(enc)
		if err == nil {
			err = p.Confine(cmd)
		}
		if err != nil {
			os.Stderr.WriteString("agentloop sandbox: " + err.Error() + "\n")
			return 126
		}
	}
	// Orphans of the command become this process's children, so it can
	// reap them: where no init reaps (many containers) they would stay
	// zombies forever, and count against the sandbox user's process limit
	// for every later session.
	syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0)
	if err := cmd.Start(); err != nil {
		os.Stderr.WriteString("cannot start " + argv[0] + ": " + err.Error() + "\n")
		return 127
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	for {
		select {
		case <-sigs:
			if orphaned() {
				syscall.Kill(0, syscall.SIGKILL) // the whole group, this process too
			}
		case <-done:
			endLeftovers()
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				// Die the way the command did, so the tool reports it.
				signal.Reset(ws.Signal())
				syscall.Kill(os.Getpid(), ws.Signal())
				select {}
			}
			return cmd.ProcessState.ExitCode()
		}
	}
}

// ErrNoSupervisor is returned when a sandboxed command is asked for in a
// program that did not call Supervise: the sandbox is applied by the
// supervisor, and without one the command would run unconfined.
var ErrNoSupervisor = errors.New("the sandbox is applied by the command supervisor, and this program did not call shell.Supervise in main")

// Command returns an unstarted command that runs argv through the
// supervisor under policy (nil or backend none: unconfined, and then
// without a supervisor too when there is none). env is the command's
// environment; the caller sets Dir, output and SysProcAttr (SysProcAttr
// gives the supervisor its own group and Pdeathsig).
func Command(policy *sandbox.Policy, env []string, argv ...string) (*exec.Cmd, error) {
	confined := policy != nil && policy.Confined()
	if supervisor == "" {
		if confined {
			return nil, ErrNoSupervisor
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		return cmd, nil
	}
	cmd := exec.Command(supervisor, append([]string{superviseArg, strconv.Itoa(os.Getpid())}, argv...)...)
	cmd.Env = env
	if confined {
		cmd.Env = append(append([]string(nil), env...), sandbox.EnvVar+"="+policy.Encode())
	}
	return cmd, nil
}

// CommandContext is Command for a command that ctx ends: the whole
// process group gets SIGKILL (the supervisor leads it), not only the
// supervisor.
func CommandContext(ctx context.Context, policy *sandbox.Policy, env []string, argv ...string) (*exec.Cmd, error) {
	c, err := Command(policy, env, argv...)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, c.Path, c.Args[1:]...)
	cmd.Env = c.Env
	cmd.SysProcAttr = sysProcAttr()
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd, nil
}

// SysProcAttr is what a command started with Command needs: its own
// process group, and its supervisor learns of this program's death.
func SysProcAttr() *syscall.SysProcAttr { return sysProcAttr() }

// sysProcAttr: the command (or its supervisor) leads a new process group;
// the supervisor learns of the owner's death.
func sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if supervisor != "" {
		a.Pdeathsig = syscall.SIGTERM
	}
	return a
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// endLeftovers stops what the command left running in the background
// (SIGTERM to the group, which this process ignores while its parent
// lives) and reaps it, for up to ten seconds; the shell tool kills whatever
// still runs once this process has exited.
func endLeftovers() {
	if !reap() {
		return // no process of the command is left
	}
	syscall.Kill(0, syscall.SIGTERM)
	// Processes already dying (a PID namespace torn down with its first
	// process kills them all) still need reaping: on a loaded machine a
	// thousand take more than a moment. Only one that ignores SIGTERM is
	// left to the shell tool after the bound.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if !reap() {
			break
		}
	}
	os.Stderr.WriteString(leftoversNote)
}

// reap collects every child that has exited and reports whether any
// child is left.
func reap() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil: // ECHILD: none left
			return false
		case pid == 0: // children left, none exited
			return true
		}
	}
}
