package testport

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// StartOwned starts cmd, a server a test or benchmark runs, so that it
// gets sig when the process that started it dies without stopping it
// (killed): no server is left running with nobody to stop it. The
// returned channel is closed once the server has exited.
func StartOwned(cmd *exec.Cmd, sig syscall.Signal) (exited <-chan struct{}, err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	started, done := make(chan error, 1), make(chan struct{})
	go func() {
		// The kernel sends Pdeathsig when the thread that started the
		// child exits, which Go may do to a thread in a process's
		// lifetime: this goroutine keeps its thread until the server exits.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}

// CheckServerDiesWithStarter runs this test binary again as the test
// named starter (with env naming a directory of t's for its files, and
// empty in any other run), which starts a server with
// StartOwned and prints a line naming it; pidOf reads the server's process
// id from a line (0: not this line). The re-run is then killed, and t
// fails unless the server exits within a minute.
func CheckServerDiesWithStarter(t *testing.T, starter, env string, pidOf func(line string) int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+starter+"$")
	cmd.Env = append(os.Environ(), env+"="+t.TempDir())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	for sc := bufio.NewScanner(out); pid == 0 && sc.Scan(); {
		pid = pidOf(sc.Text())
	}
	cmd.Process.Kill()
	cmd.Wait()
	if pid == 0 {
		t.Fatalf("%s named no server it started", starter)
	}
	for deadline := time.Now().Add(time.Minute); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the server (pid %d) still runs a minute after its starter was killed", pid)
		}
	}
}
