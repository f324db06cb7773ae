// Package temporaltest gives tests a real Temporal dev server: the
// Temporal CLI's `temporal server start-dev`, found as $AGENTLOOP_TEMPORAL_CLI,
// on PATH, or where .ci/run caches it
// (${XDG_CACHE_HOME:-~/.cache}/agentloop/bin/temporal-v1.5.1). Without it tests
// skip, saying how to get it; with AGENTLOOP_TEMPORAL_TESTS set (CI sets
// it) they fail instead.
package temporaltest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/testport"
)

// CLI finds the Temporal CLI.
func CLI() (string, error) {
	if p := os.Getenv("AGENTLOOP_TEMPORAL_CLI"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "agentloop", "bin", "temporal-v1.5.1")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no Temporal CLI (go install github.com/temporalio/cli/cmd/temporal@v1.5.1, or set AGENTLOOP_TEMPORAL_CLI)")
}

// Start starts a dev server on a free loopback port for the test and
// returns its frontend's HOST:PORT; it stops with the test.
func Start(t testing.TB) string {
	t.Helper()
	cli, err := CLI()
	if err != nil {
		if os.Getenv("AGENTLOOP_TEMPORAL_TESTS") != "" {
			t.Fatalf("AGENTLOOP_TEMPORAL_TESTS is set but: %v", err)
		}
		t.Skipf("%v", err)
	}
	addr, stop, err := StartServer(cli, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// StartServer starts `temporal server start-dev` (cli) on free loopback
// ports with its files in dir, waits until it listens, and returns its
// frontend's HOST:PORT and the function that stops it. The server keeps
// its state in memory (it is thrown away with the test).
//
// A port found free can be taken by another process before the server
// binds it; a server that exits saying so is started again on other ports.
func StartServer(cli, dir string) (addr string, stop func(), err error) {
	attempt := 0
	err = testport.OnFreePorts(3, func(ports []int) error {
		attempt++
		addr, stop, err = startOn(cli, dir, ports, attempt)
		return err
	})
	return addr, stop, err
}

// startOn starts the server on ports (frontend, HTTP, metrics), logging
// to a file in dir named for the attempt.
func startOn(cli, dir string, ports []int, attempt int) (addr string, stop func(), err error) {
	cmd := exec.Command(cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", strconv.Itoa(ports[0]),
		"--http-port", strconv.Itoa(ports[1]), "--metrics-port", strconv.Itoa(ports[2]), "--log-level", "error",
		// An activity a workflow schedules goes to its worker in the same
		// round trip when it can (as production clusters can enable).
		"--dynamic-config-value", "system.enableActivityEagerExecution=true")
	logPath := filepath.Join(dir, fmt.Sprintf("server-%d.log", attempt))
	logf, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, and SIGTERM when its starter is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	exited, err := testport.StartOwned(cmd, syscall.SIGTERM)
	if err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("temporal server start-dev: %w", err)
	}
	stop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logf.Close()
	}
	addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	dials := func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	log := func() []byte { b, _ := os.ReadFile(logPath); return b }
	if err := testport.WaitReady(cmd.Process.Pid, exited, ports[0], 60*time.Second, dials, log, "address already in use"); err != nil {
		stop()
		return "", nil, fmt.Errorf("the Temporal dev server on %s: %w", addr, err)
	}
	return addr, stop, nil
}
