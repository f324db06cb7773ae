package testport

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A port Free returns can be listened on, and lies below the ephemeral
// range where the kernel has one to stay below.
func TestFreeGivesAPortToListenOn(t *testing.T) {
	for range 20 {
		p, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		if low := ephemeralLow(); low > minPort+1000 && (p < minPort || p >= low) {
			t.Fatalf("port %d is not in [%d, %d)", p, minPort, low)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
}

// A listener of this process is told apart from one of another process.
func TestListenedByTellsWhoseListenerItIs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	mine, err := ListenedBy(os.Getpid(), port)
	if err != nil {
		t.Skipf("no /proc to read here: %v", err)
	}
	if !mine {
		t.Fatalf("this process's listener on %d not found", port)
	}
	// The parent (go test) does not listen there.
	if theirs, err := ListenedBy(os.Getppid(), port); err != nil || theirs {
		t.Fatalf("the parent process counted as listening on %d: %v %v", port, theirs, err)
	}
	free, err := Free()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := ListenedBy(os.Getpid(), free); err != nil || ok {
		t.Fatalf("a port nobody listens on counted as listened on: %v %v", ok, err)
	}
}

// TestMain lets the test binary stand in for a server (see server).
func TestMain(m *testing.M) {
	switch os.Getenv("TESTPORT_SERVER") {
	case "":
		os.Exit(m.Run())
	case "listen":
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("TESTPORT_PORT"))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		defer ln.Close()
		time.Sleep(time.Minute)
	default:
		fmt.Println(os.Getenv("TESTPORT_SERVER"))
		os.Exit(1)
	}
}

// server starts this test binary as a server that listens on port
// (behave "listen") or says behave and exits; it returns its pid, a
// channel closed when it exited and its output so far.
func server(t *testing.T, behave string, port int) (int, <-chan struct{}, func() []byte) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TESTPORT_SERVER="+behave, "TESTPORT_PORT="+strconv.Itoa(port))
	var out bytes.Buffer
	var mu sync.Mutex
	cmd.Stdout = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd.Process.Pid, exited, func() []byte { mu.Lock(); defer mu.Unlock(); return bytes.Clone(out.Bytes()) }
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A server that listens is ready; one that exits says why, as
// ErrPortTaken when its words say its port was in use.
func TestWaitReady(t *testing.T) {
	dialer := func(port int) func() bool {
		return func() bool {
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err == nil {
				c.Close()
			}
			return err == nil
		}
	}
	port, err := Free()
	if err != nil {
		t.Fatal(err)
	}
	pid, exited, log := server(t, "listen", port)
	if err := WaitReady(pid, exited, port, 30*time.Second, dialer(port), log, "in use"); err != nil {
		t.Fatalf("a server listening: %v", err)
	}
	pid, exited, log = server(t, "bind: address in use", port)
	if err := WaitReady(pid, exited, port, 30*time.Second, dialer(port), log, "in use"); !errors.Is(err, ErrPortTaken) || !strings.Contains(err.Error(), "bind: address in use") {
		t.Fatalf("a server whose port was taken: %v, want ErrPortTaken with its words", err)
	}
	pid, exited, log = server(t, "no such config", port)
	if err := WaitReady(pid, exited, port, 30*time.Second, dialer(port), log, "in use"); err == nil || errors.Is(err, ErrPortTaken) || !strings.Contains(err.Error(), "no such config") {
		t.Fatalf("a server that exits for another reason: %v, want its words and not ErrPortTaken", err)
	}
}

// OnFreePorts starts again on fresh ports while the port was taken, five
// times at most, and gives other outcomes back at once.
func TestOnFreePortsStartsAgainWhileTaken(t *testing.T) {
	calls := 0
	err := OnFreePorts(2, func(ports []int) error {
		calls++
		if len(ports) != 2 || ports[0] == ports[1] {
			t.Fatalf("ports %v", ports)
		}
		if calls < 3 {
			return ErrPortTaken
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("%d calls, %v: want 3 and nil", calls, err)
	}
	calls = 0
	if err := OnFreePorts(1, func([]int) error { calls++; return ErrPortTaken }); !errors.Is(err, ErrPortTaken) || calls != attempts {
		t.Fatalf("%d calls, %v: want %d and ErrPortTaken", calls, err, attempts)
	}
	calls = 0
	other := errors.New("bad flag")
	if err := OnFreePorts(1, func([]int) error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("%d calls, %v: want 1 and the error", calls, err)
	}
}

// starterEnv makes a run of this test binary TestStarter.
const starterEnv = "AGENTLOOP_TESTPORT_STARTER"

// A server started with StartOwned exits when its starter is killed.
func TestStartOwnedServerDiesWithItsStarter(t *testing.T) {
	CheckServerDiesWithStarter(t, "TestStarter", starterEnv, func(line string) int {
		pid, _ := strconv.Atoi(strings.TrimPrefix(line, "server "))
		return pid
	})
}

// TestStarter starts a server that would run for an hour, prints its
// pid, and waits to be killed (run by TestStartOwnedServerDiesWithItsStarter).
func TestStarter(t *testing.T) {
	if os.Getenv(starterEnv) == "" {
		t.Skip("run by TestStartOwnedServerDiesWithItsStarter")
	}
	cmd := exec.Command("sleep", "3600")
	if _, err := StartOwned(cmd, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("server %d\n", cmd.Process.Pid)
	select {}
}
