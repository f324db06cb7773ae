package testport

import (
	"net"
	"os"
	"strconv"
	"testing"
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
