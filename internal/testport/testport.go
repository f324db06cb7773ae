// Package testport finds loopback TCP ports for the servers tests start as
// processes of their own and must tell a port in advance: PostgreSQL, the
// Temporal dev server, an npm MCP server.
package testport

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Free returns a loopback port nothing listens on. It is chosen below the
// kernel's ephemeral range when there is room: outgoing connections, and
// listeners asking for port 0, take their ports from that range, so none
// of them can take this one before the server binds it. A port from
// another test choosing at random at the same moment is still possible;
// a caller that can tell (the server exits saying its address is in use)
// should start again on another.
func Free() (int, error) {
	if low := ephemeralLow(); low > minPort+1000 {
		for range 50 {
			p := minPort + rand.IntN(low-minPort)
			if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				ln.Close()
				return p, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Port is Free for a test, which it fails when no port can be had.
func Port(t testing.TB) int {
	t.Helper()
	p, err := Free()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// minPort is the lowest port Free picks: above the well-known and most
// registered services' ports.
const minPort = 20000

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// when it cannot be read (not Linux).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	low, _ := strconv.Atoi(f[0])
	return low
}

// ListenedBy reports whether process pid listens on TCP port: a server
// that found its port taken must not be mistaken for the process that
// took it. It reads /proc (Linux) and errs where the kernel's socket
// tables cannot be read, leaving the caller to fall back on dialling.
func ListenedBy(pid, port int) (bool, error) {
	inodes, err := listeningSockets(port)
	if err != nil || len(inodes) == 0 {
		return false, err
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		// Gone (or exiting: a zombie's descriptors cannot be read), so
		// not listening; only an unreadable /proc/net is an error.
		return false, nil
	}
	for _, fd := range fds {
		link, err := os.Readlink(dir + "/" + fd.Name())
		if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(link[len("socket:["):], "]")] {
			return true, nil
		}
	}
	return false, nil
}

// listeningSockets returns the inodes of the sockets listening on TCP
// port, from the kernel's tables of them.
func listeningSockets(port int) (map[string]bool, error) {
	inodes := map[string]bool{}
	for i, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			continue // no IPv6
		}
		// sl local_address rem_address st ... inode: the address is
		// HEXIP:HEXPORT, state 0A is LISTEN.
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" {
				continue
			}
			colon := strings.LastIndexByte(f[1], ':')
			if p, err := strconv.ParseUint(f[1][colon+1:], 16, 32); err == nil && int(p) == port {
				inodes[f[9]] = true
			}
		}
	}
	return inodes, nil
}

// ErrPortTaken is a server that exited because a port it was given was
// in use: another process took it between Free and the server's bind.
var ErrPortTaken = errors.New("a port was taken before the server bound it")

// attempts is how often OnFreePorts starts a server whose port was taken.
const attempts = 5

// OnFreePorts calls start with n free ports (Free) until it returns
// anything but ErrPortTaken, at most five times.
func OnFreePorts(n int, start func(ports []int) error) error {
	for attempt := 1; ; attempt++ {
		ports := make([]int, n)
		for i := range ports {
			var err error
			if ports[i], err = Free(); err != nil {
				return err
			}
		}
		err := start(ports)
		if !errors.Is(err, ErrPortTaken) || attempt == attempts {
			return err
		}
	}
}

// WaitReady waits, up to within, until the server process pid listens
// on port itself and ready reports that it takes requests. Another
// process that took the port answers too, while the server is about to
// exit: only the server's own listener counts. exited is closed when the
// server's process has exited; a server that exits first is reported
// with its log, as ErrPortTaken when the log holds inUse (the server's
// words for a port in use).
func WaitReady(pid int, exited <-chan struct{}, port int, within time.Duration, ready func() bool, log func() []byte, inUse string) error {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			b := log()
			if bytes.Contains(b, []byte(inUse)) {
				return fmt.Errorf("%w:\n%s", ErrPortTaken, b)
			}
			return fmt.Errorf("it exited before it was ready:\n%s", b)
		default:
		}
		if ours, err := ListenedBy(pid, port); err == nil && !ours {
			continue
		}
		if ready() {
			return nil
		}
	}
	return fmt.Errorf("it was not ready within %v:\n%s", within, log())
}
